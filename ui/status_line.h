// The status line at the bottom of the window and the help shown while the
// store is empty. UI thread only.
#pragma once

#include "ui/connect_help.h"
#include "ui/session_state.h"
#include "ui/snapshots.h"

namespace kiln::ui {

// What the user asked of the receiver from the status line.
enum class ReceiverChange { kNone, kRequireToken, kLoopbackOnly };

// Where kiln listens and who may send (a warning button when anyone who
// reaches the port can, offering a token or loopback only), agents seen
// recently and their samples/s, store size,
// the selection's totals, and a badge when inputs were rejected (clicking
// it opens the Log view); while symbols are read, which executable and from
// where (clicking it opens the Executables view).
struct StatusLineActions {
  ReceiverChange receiver = ReceiverChange::kNone;
  bool open_data_quality = false;  // the data-loss badge was clicked
  bool open_store_settings = false;  // the store's size and retention were clicked
};
StatusLineActions DrawStatusLine(SessionState& session, const StatusSnapshot* status,
                                 const AnalysisSnapshot* analysis, bool computing,
                                 const SymbolActivity* symbols = nullptr);

// The Data quality window: every reason data was refused, cut or deleted
// (storage/model/data_loss.h) with its severity, this run's count, the
// store's total and the senders it came from.
void DrawDataQualityDialog(bool* open, const StatusSnapshot* status, SessionState& session);

// Lost data worth a badge: every count of a warning or error reason, this
// run's and the store's.
uint64_t DataLossBadgeCount(const StatusSnapshot& status);

// The receiver's access as its stats tell it (no token file: the app knows it).
ReceiverAccess AccessOf(const ingest::ReceiverStats& stats);

// The status line's senders: how many, and their rates per kind of sample
// ("2 agents: On-CPU 38/s, Off-CPU 6.0/s"); an off-CPU event is not an
// on-CPU sample, so they are never added up.
std::string AgentRatesSummary(const std::vector<ingest::PeerStats>& peers);
// One sender as its tooltip line reads: host names first, then the
// address ("build-7 (10.0.0.5): On-CPU 19/s, Off-CPU 3.0/s, 120 requests").
std::string SenderSummary(const ingest::PeerStats& peer);

// The status line's forwarding item (kiln --forward), over every
// destination: "forwarding to HOST:PORT" while each delivers and owes
// nothing; how much is owed while catching up; which are not connected,
// with what is owed and how old it is. `alarm` is set when a destination
// that failed its last attempt is owed requests: data waits on it. A
// destination not tried yet (nothing accepted since kiln started) is not
// "not connected". "" without destinations.
std::string ForwardingSummary(const std::vector<ingest::ForwardStatus>& forwarding, int64_t now_ns, bool* alarm);

// How to get data in: the agent command line, a button for the Connect an
// agent dialog (other hosts, the Collector, ssh), opening a capture, the
// demo. Returns true when that button was clicked. `local_agent` as
// ConnectRecipes takes it.
bool DrawEmptyStoreHelp(const StatusSnapshot* status, const std::string& local_agent);

}  // namespace kiln::ui
