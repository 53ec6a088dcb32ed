#include "app/receiver_dialogs.h"

#include "app/local_addresses.h"
#include "ingest/receiver_security.h"
#include "kiln_version.h"
#include "ui/connect_help.h"
#include "ui/help_dialogs.h"

namespace kiln::app {

ReceiverDialogs::ReceiverDialogs(Target target) : target_(std::move(target)), local_agent_(LocalAgent()) {}

void ReceiverDialogs::OpenConnect() {
  addresses_ = LocalAddresses();
  connect_open_ = true;
}

std::string ReceiverDialogs::ListenAddress() const {
  std::optional<ingest::ReceiverStats> stats = target_.receiver ? target_.receiver->stats() : std::nullopt;
  return stats ? stats->listen_address : std::string();
}

ui::ReceiverAccess ReceiverDialogs::Access() const {
  if (!target_.receiver) return {};
  std::optional<ingest::ReceiverStats> stats = target_.receiver->stats();
  if (!stats) return {};
  ui::ReceiverAccess access = ui::AccessOf(*stats);
  access.token_file = target_.receiver->resolved().token_file;
  return access;
}

void ReceiverDialogs::Change(ui::ReceiverChange change) {
  if (!target_.receiver || change == ui::ReceiverChange::kNone) return;
  ResolvedReceiver next = target_.receiver->resolved();
  std::string done;
  if (change == ui::ReceiverChange::kRequireToken) {
    absl::StatusOr<std::string> token = ingest::GenerateToken();
    absl::Status saved = token.ok() ? ingest::WriteTokenFile(target_.saved_token_file, *token) : token.status();
    if (!saved.ok()) {
      target_.notify(true, "Could not make a token: " + std::string(saved.message()));
      return;
    }
    next.options.security.auth_token = *token;
    next.token_file = target_.saved_token_file;
    next.token_source = target_.saved_token_file + " (saved by the window)";
    done = "A token is now required; it is in " + target_.saved_token_file +
           " (readable by you only). Agents pass it with -auth-token-file (see Connect an agent).";
  } else {
    const std::string port = ui::PortOf(next.options.listen_address);
    next.options.listen_address = "127.0.0.1:" + (port.empty() ? std::string("11000") : port);
    target_.settings->listen = next.options.listen_address;
    if (std::string error = SaveSettings(*target_.paths, *target_.settings); !error.empty()) {
      target_.notify(true, "Settings: " + error);
    }
    done = "Kiln now listens on " + next.options.listen_address +
           " only; agents on other hosts need an ssh tunnel (see Connect an agent).";
  }
  if (absl::Status s = target_.receiver->Start(next); !s.ok()) {
    target_.notify(true, "The receiver could not restart that way: " + std::string(s.message()));
    return;
  }
  (void)target_.store->AppendLog(storage::LogLevel::kInfo, done);
  target_.notify(false, done);
  // The new token is what an agent needs next: show where it is.
  if (change == ui::ReceiverChange::kRequireToken) OpenConnect();
}

void ReceiverDialogs::Draw() {
  if (!connect_open_ && !about_open_) return;  // the receiver's stats are not free
  const std::string listen = ListenAddress();
  ui::DrawConnectDialog(&connect_open_, listen, addresses_, Access(), local_agent_);
  ui::DrawAboutDialog(&about_open_, {.version = kVersion,
                                     .store_path = target_.data_dir,
                                     .listen_address = listen,
                                     .settings_path = target_.paths->preferences,
                                     .state_path = target_.paths->state});
}

}  // namespace kiln::app
