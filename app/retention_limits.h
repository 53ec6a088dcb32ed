// Retention limits as people write them: the --retention-age and
// --retention-size flags, settings.ini and the window's Store settings
// dialog all read and show them through these functions. Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::app {

// "90s", "30m", "12h", "14d", "2w" or "0" (off) as nanoseconds; an error
// says what is wanted and names the text.
absl::StatusOr<std::chrono::nanoseconds> ParseRetentionAge(const std::string& text);
// "4GiB", "512MiB", "2GB", "750M", "1048576" or "0" (off) as bytes: a whole
// number with an optional unit B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB,
// every K 1024 (as the flags read them), any case.
absl::StatusOr<uint64_t> ParseRetentionSize(const std::string& text);

// The shortest way to write a limit that parses back to it: "14d",
// "90s", "0"; "4GiB", "512MiB", "0".
std::string FormatRetentionAge(std::chrono::nanoseconds age);
std::string FormatRetentionSize(uint64_t bytes);

}  // namespace kiln::app
