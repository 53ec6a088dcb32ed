// Help > Connect an agent and About Kiln, and the status line's changes to
// the receiver (require a token, listen on loopback only): what the window
// shows and changes of its receiver, in a class of its own so the window's
// App only opens and draws it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "app/desktop_settings.h"
#include "app/receiver_control.h"
#include "storage/store.h"
#include "ui/status_line.h"

namespace kiln::app {

class ReceiverDialogs {
 public:
  // What the dialogs read and change, and the window's notices (error or
  // not, text).
  struct Target {
    ReceiverControl* receiver = nullptr;  // may be null or not listening
    storage::Store* store = nullptr;      // the live store, whose Log records each change
    std::string data_dir;
    std::string saved_token_file;  // where "Require a token" writes the token
    DesktopSettings* settings = nullptr;
    const SettingsPaths* paths = nullptr;
    std::function<void(bool error, const std::string& text)> notify;
  };
  explicit ReceiverDialogs(Target target);

  // Connect an agent, with this machine's addresses read now.
  void OpenConnect();
  void OpenAbout() { about_open_ = true; }
  // The receiver restarts with the change (in-flight requests are answered
  // first) and the choice is saved for the next start; a notice says what
  // changed or why it could not.
  void Change(ui::ReceiverChange change);
  // Each frame: the dialogs that are open.
  void Draw();
  // How this machine runs kiln-agent (the empty store's help names it).
  const std::string& local_agent() const { return local_agent_; }

 private:
  std::string ListenAddress() const;
  ui::ReceiverAccess Access() const;

  Target target_;
  bool connect_open_ = false, about_open_ = false;
  std::vector<std::string> addresses_;  // for Connect an agent, read when it opens
  const std::string local_agent_;
};

}  // namespace kiln::app
