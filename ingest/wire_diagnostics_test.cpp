// Tests for LocateDecodeError: each kind of broken encoding is named with
// the field path and the byte offset.
#include "ingest/wire_diagnostics.h"

#include <doctest/doctest.h>

#include "ingest/message_text.h"
#include "ingest/otlp_request_builder.h"

namespace kiln::ingest {
namespace {

using Request = OtlpRequestBuilder::Request;

std::string Locate(const std::string& bytes) {
  Request parsed;
  CHECK_FALSE(parsed.ParseFromString(bytes));  // the walker only runs on failures
  return LocateDecodeError(bytes, Request::descriptor());
}

std::string ValidRequest() {
  OtlpRequestBuilder b;
  int32_t stack = b.Stack({b.Location(b.Mapping("/bin/a"), 0x10, {{"main"}})});
  auto* p = b.AddProfile(b.Resource({{"service.name", "s"}}));
  OtlpRequestBuilder::AddSample(p, stack, {}, {1, 2, 3});
  return b.request.SerializeAsString();
}

TEST_CASE("a valid request has no decode error") {
  std::string bytes = ValidRequest();
  CHECK(LocateDecodeError(bytes, Request::descriptor()).empty());
}

TEST_CASE("truncation names the innermost field being read") {
  std::string bytes = ValidRequest();
  // Fields serialize in number order, so the dictionary (2) comes last,
  // and its last table is stack_table (7).
  std::string cut = bytes.substr(0, bytes.size() - 1);
  std::string error = Locate(cut);
  CAPTURE(error);
  CHECK(error.find("dictionary.stack_table[1].location_indices at byte offset") == 0);
  // Cut inside the resource_profiles (1) instead: the sample's timestamps.
  Request r;
  REQUIRE(r.ParseFromString(bytes));
  r.clear_dictionary();
  std::string rp = r.SerializeAsString();
  error = Locate(rp.substr(0, rp.size() - 3));
  CAPTURE(error);
  CHECK(error.find("resource_profiles[0].scope_profiles[0].profiles[0].") == 0);
  CHECK(error.find(" at byte offset ") != std::string::npos);
  CHECK(error.find("(inside resource_profiles[0].scope_profiles[0].profiles[0]") != std::string::npos);
}

TEST_CASE("garbage bytes") {
  std::string error = Locate(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11));
  CHECK(error == "message at byte offset 0: truncated or overlong tag varint");
  CHECK(Locate(std::string("\x0f", 1)) == "resource_profiles[0] at byte offset 0: invalid wire type 7");
  CHECK(Locate(std::string("\x00", 1)) == "message at byte offset 0: invalid field number 0");
}

TEST_CASE("invalid UTF-8 in a string field") {
  OtlpRequestBuilder b;
  b.String("ok");
  b.String("XX");
  std::string bytes = b.request.SerializeAsString();
  size_t at = bytes.find("XX");
  bytes[at] = '\xc3';
  bytes[at + 1] = '\x28';
  std::string error = Locate(bytes);
  CHECK(error == Cat("dictionary.string_table[2] at byte offset ", at, ": string is not valid UTF-8"));
}

// Length-delimited field `tag` around `body`.
std::string Wrap(char tag, const std::string& body) {
  std::string out(1, tag);
  size_t n = body.size();
  do {
    uint8_t byte = n & 0x7f;
    n >>= 7;
    if (n) byte |= 0x80;
    out += static_cast<char>(byte);
  } while (n);
  return out + body;
}

TEST_CASE("deep nesting is reported, not recursed into forever") {
  // AnyValue{array_value(5){values(1){AnyValue{...}}}}, 200 levels, inside
  // dictionary(2).attribute_table(6).value(2). Encoded by hand: protobuf
  // itself refuses to build something that deep.
  std::string value;
  for (int i = 0; i < 200; ++i) value = Wrap('\x2a', Wrap('\x0a', value));
  std::string bytes = Wrap('\x12', Wrap('\x32', Wrap('\x12', value)));
  std::string error = Locate(bytes);
  CAPTURE(error);
  CHECK(error.find("dictionary.attribute_table[0].value.array_value.values[0]") == 0);
  CHECK(error.find("nested deeper than 100") != std::string::npos);
}

}  // namespace
}  // namespace kiln::ingest
