// Tests for InflateMessage: round trips, the exact limit, bombs, corrupt
// and truncated input.
#include "ingest/message_decompression.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <string>

namespace kiln::ingest {
namespace {

std::string Compress(const std::string& data, bool gzip) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, gzip ? 16 + MAX_WBITS : MAX_WBITS, 9,
                       Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST_CASE("gzip and deflate round trip") {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += std::to_string(i * 7919 % 1000);
  for (bool gzip : {true, false}) {
    const char* encoding = gzip ? "gzip" : "deflate";
    std::string packed = Compress(data, gzip);
    CHECK(SniffCompression(packed) == encoding);
    auto out = InflateMessage(packed, encoding, data.size());
    REQUIRE(out.ok());
    CHECK(*out == data);
    // One byte under the size is over the limit.
    auto over = InflateMessage(packed, encoding, data.size() - 1);
    CHECK(over.status().code() == absl::StatusCode::kResourceExhausted);
  }
}

TEST_CASE("a bomb stops at the limit") {
  std::string zeros(64 << 20, '\0');
  std::string packed = Compress(zeros, true);
  CHECK(packed.size() < (1 << 20));
  auto out = InflateMessage(packed, "gzip", 1 << 20);
  CHECK(out.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(out.status().message()) ==
        "request decompresses to more than the limit of 1048576 bytes");
}

TEST_CASE("corrupt and truncated input is InvalidArgument") {
  std::string data(10000, 'x');
  for (int i = 0; i < 10000; i += 7) data[i] = static_cast<char>('a' + i % 26);
  std::string packed = Compress(data, true);
  auto truncated = InflateMessage(packed.substr(0, packed.size() / 2), "gzip", 1 << 20);
  CHECK(truncated.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(truncated.status().message()).find("ends early") != std::string::npos);
  std::string corrupt = packed;
  for (size_t i = 12; i < corrupt.size() - 8; i += 3) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  auto bad = InflateMessage(corrupt, "gzip", 1 << 20);
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("SniffCompression") {
  CHECK(SniffCompression("\x0a\x05") == "");  // a plain request
  CHECK(SniffCompression("") == "");
  CHECK(SniffCompression("\x1f\x8b\x08") == "gzip");
  CHECK(SniffCompression("\x78\x9c") == "deflate");
  CHECK(SniffCompression("\x78\x01") == "deflate");
  CHECK(SniffCompression("\x78\x02") == "");
}

}  // namespace
}  // namespace kiln::ingest
