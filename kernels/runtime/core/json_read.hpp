// Reading JSON a user hands us (device profiles, run records, traces): every error names the file, the record and
// the field, never a raw nlohmann exception.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"

namespace tl {

// Deeper documents are refused: nothing we read nests more than a few levels, and code that walks a document
// recursively (dump, ==, conversion to Lua) must not run out of stack on a hostile one.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` from `source` (a file name, "file:LINE"). Errors (ErrorCode::parse) start with the source, then say
// where: "line 3, column 7" for a syntax error; for a number outside double range or nesting past kMaxJsonDepth,
// the value's place: "record 3, field \"flops\"" (an element of a top-level array is a record) or
// "field \"traceEvents[12].args\"".
Result<nlohmann::json> parse_json(const std::string& text, const std::string& source);
// The file at `path` parsed; `what` names it in errors ("cannot read the device profile X: no such file").
Result<nlohmann::json> read_json_file(const std::string& path, const std::string& what);

// Typed reads of one object's members that keep the first error, so a reader checks a record field by field and
// reports once: "WHERE: field \"args.block\" is array, expected an integer". Absent members give the fallback.
class JsonFields {
 public:
  // `where` says which record ("trace event 12"); `prefix` is put before member names ("args." for a nested object).
  JsonFields(const nlohmann::json& object, std::string where, std::string prefix = {});

  double number(const char* key, double fallback);
  // An integer in [lo, hi].
  std::int64_t integer(const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi);
  std::string text(const char* key, std::string fallback = {});
  bool flag(const char* key, bool fallback);
  // A nested object's reader (an empty object when absent; an error when present and not an object).
  JsonFields object(const char* key);

  bool ok() const { return m_status->ok(); }
  const Status& status() const { return *m_status; }

 private:
  JsonFields(const nlohmann::json* object, std::string where, std::string prefix, std::shared_ptr<Status> status);
  const nlohmann::json* member(const char* key, bool (nlohmann::json::*is)() const noexcept, const char* expected);
  void fail(const std::string& field, const std::string& what);

  const nlohmann::json* m_object;  // null: not an object (reported), every read gives its fallback
  std::string m_where, m_prefix;
  std::shared_ptr<Status> m_status;  // shared with nested readers: the first error of the whole record
};

}  // namespace tl
