// The status line at the bottom of the window and the help shown while the
// store is empty. UI thread only.
#pragma once

#include "ui/session_state.h"
#include "ui/snapshots.h"

namespace kiln::ui {

// Where kiln listens, agents seen recently and their samples/s, store size,
// the selection's totals, and a badge when inputs were rejected (clicking
// it opens the Log view); while symbols are read, which executable and from
// where (clicking it opens the Executables view).
void DrawStatusLine(SessionState& session, const StatusSnapshot* status, const AnalysisSnapshot* analysis,
                    bool computing, const SymbolActivity* symbols = nullptr);

// How to get data in: the agent command line, a button for the Connect an
// agent dialog (other hosts, the Collector, ssh), opening a capture, the
// demo. Returns true when that button was clicked.
bool DrawEmptyStoreHelp(const StatusSnapshot* status);

// Rejected inputs worth a badge: failed requests plus rejected profiles.
uint64_t RejectedCount(const StatusSnapshot& status);

}  // namespace kiln::ui
