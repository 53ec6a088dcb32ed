// What the forwarder (forwarder.h) tells about each destination, and its
// one-line text: apart from the forwarder so the window's status line
// (kiln_ui, which links no gRPC) and the metrics share them with
// kiln --headless's progress lines.
#pragma once

#include <cstdint>
#include <string>

#include "storage/store.h"

namespace kiln::ingest {

struct ForwardStatus {
  std::string target;
  bool connected = false;  // the last attempt delivered
  storage::ForwardBacklog backlog;
  uint64_t delivered = 0;  // requests accepted by the destination since start
  uint64_t rejected = 0;   // refused as invalid (dropped) since start
  std::string last_error;  // "" after a success
  bool operator==(const ForwardStatus&) const = default;
};

// One destination as kiln --headless prints it and the window's status line
// tooltip shows it: "forwarding to HOST:PORT: not connected, 12 requests
// (1.2 MiB) owed, oldest 3m 10s, 40 delivered (UNAVAILABLE: ...)".
std::string DescribeForwardStatus(const ForwardStatus& status, int64_t now_ns);

}  // namespace kiln::ingest
