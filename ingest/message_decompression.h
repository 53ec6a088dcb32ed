// Decompression of gRPC request messages with a hard output limit.
//
// Why not let gRPC do it: gRPC 1.51 inflates a compressed message completely
// and only then compares its size with the receive limit (measured: a 512 MiB
// gzip bomb of 0.5 MiB made the server allocate 565 MiB before it answered
// RESOURCE_EXHAUSTED). The receiver therefore turns gRPC's per-message
// decompression off and calls InflateMessage, which stops as soon as the
// output passes the limit.
//
// Threads: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::ingest {

// The compression of a received message, from its first bytes: "gzip"
// (magic 1f 8b), "deflate" (a zlib header), or "" (not compressed). gRPC
// does not show the C++ API the message's compressed flag or its
// grpc-encoding header, so the payload is sniffed. That is unambiguous:
// a serialized ExportProfilesServiceRequest cannot start with 0x1f (field 3,
// wire type 7), and 0x78 would be field 15, which the message does not have
// (the caller still falls back to the raw bytes when "deflate" data does not
// inflate).
std::string_view SniffCompression(std::string_view bytes);

// Inflates `compressed`. Errors: ResourceExhausted when the output would
// exceed `max_bytes`, InvalidArgument (naming the compressed byte offset)
// when the data is corrupt or truncated.
[[nodiscard]] absl::StatusOr<std::string> InflateMessage(std::string_view compressed,
                                                         std::string_view encoding, size_t max_bytes);

}  // namespace kiln::ingest
