// parse_json with the place of an out-of-range number or a too-deep nesting; JsonFields' typed member reads.
#include "runtime/core/json_read.hpp"

#include <fstream>
#include <sstream>
#include <vector>

namespace tl {
namespace {

// Where the parser is: one frame per open object or array. An array counts the elements it has started; an
// object remembers its last key.
struct Frame {
  bool array = false;
  std::size_t started = 0;
  std::string key;
};

struct TooDeep {};

// "record 3, field \"flops\"" / "field \"traceEvents[12].args\"": the place of the value being parsed, whose
// innermost container is the last frame (its element not started yet when it is an array).
std::string place(const std::vector<Frame>& frames) {
  std::string path, record;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (f.array) {
      const std::size_t index = i + 1 < frames.size() ? f.started - 1 : f.started;
      if (i == 0) record = "record " + std::to_string(index);
      else path += "[" + std::to_string(index) + "]";
    } else {
      path += (path.empty() ? "" : ".") + f.key;
    }
  }
  if (path.empty()) return record.empty() ? "the document" : record;
  return (record.empty() ? "" : record + ", ") + "field \"" + path + "\"";
}

}  // namespace

Result<nlohmann::json> parse_json(const std::string& text, const std::string& source) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<Frame> frames;
  auto track = [&](int, Event event, nlohmann::json& parsed) {
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (frames.size() >= static_cast<std::size_t>(kMaxJsonDepth)) throw TooDeep{};
        if (!frames.empty() && frames.back().array) ++frames.back().started;
        frames.push_back({event == Event::array_start, 0, {}});
        break;
      case Event::object_end:
      case Event::array_end:
        frames.pop_back();
        break;
      case Event::key:
        frames.back().key = parsed.get<std::string>();
        break;
      case Event::value:
        if (!frames.empty() && frames.back().array) ++frames.back().started;
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, track);
  } catch (const TooDeep&) {
    return make_error(ErrorCode::parse, source + ": arrays and objects nested deeper than " +
                                            std::to_string(kMaxJsonDepth) + " levels");
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> from "line" on.
    const std::string what = e.what();
    const auto at = what.find("line ");
    return make_error(ErrorCode::parse, source + ": not JSON: " + (at == std::string::npos ? what : what.substr(at)));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range.406: "number overflow parsing '1e400'"; the place is where the parser stood.
    std::string what = e.what();
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
    if (e.id == 406) what = "a number outside the range of a double (" + what + ")";
    return make_error(ErrorCode::parse, source + ": " + place(frames) + ": " + what);
  }
}

Result<nlohmann::json> read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(ErrorCode::not_found, "cannot open the " + what + " " + path + ": no such file or no permission");
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return make_error(ErrorCode::io, "cannot read the " + what + " " + path);
  return parse_json(text.str(), path);
}

// [SECTION] JsonFields

JsonFields::JsonFields(const nlohmann::json& object, std::string where, std::string prefix)
    : JsonFields(&object, std::move(where), std::move(prefix), std::make_shared<Status>()) {}

JsonFields::JsonFields(const nlohmann::json* object, std::string where, std::string prefix, std::shared_ptr<Status> status)
    : m_object(object), m_where(std::move(where)), m_prefix(std::move(prefix)), m_status(std::move(status)) {
  if (m_object && !m_object->is_object()) {
    if (m_status->ok())
      *m_status = make_error(ErrorCode::parse, m_where + ": " + (m_prefix.empty() ? "is " : "field \"" +
                                             m_prefix.substr(0, m_prefix.size() - 1) + "\" is ") +
                                             m_object->type_name() + ", expected an object");
    m_object = nullptr;
  }
}

void JsonFields::fail(const std::string& field, const std::string& what) {
  if (m_status->ok()) *m_status = make_error(ErrorCode::parse, m_where + ": field \"" + m_prefix + field + "\" " + what);
}

const nlohmann::json* JsonFields::member(const char* key, bool (nlohmann::json::*is)() const noexcept,
                                         const char* expected) {
  if (!m_object) return nullptr;
  auto it = m_object->find(key);
  if (it == m_object->end()) return nullptr;
  if (!((*it).*is)()) {
    fail(key, std::string("is ") + it->type_name() + ", expected " + expected);
    return nullptr;
  }
  return &*it;
}

double JsonFields::number(const char* key, double fallback) {
  const nlohmann::json* v = member(key, &nlohmann::json::is_number, "a number");
  return v ? v->get<double>() : fallback;
}

std::int64_t JsonFields::integer(const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  const nlohmann::json* v = member(key, &nlohmann::json::is_number_integer, "an integer");
  if (!v) return fallback;
  // An unsigned value past int64 reads negative as int64: compare it as unsigned first.
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
    fail(key, "is " + v->dump() + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
    return fallback;
  }
  const auto x = v->get<std::int64_t>();
  if (x < lo || x > hi) {
    fail(key, "is " + v->dump() + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
    return fallback;
  }
  return x;
}

std::string JsonFields::text(const char* key, std::string fallback) {
  const nlohmann::json* v = member(key, &nlohmann::json::is_string, "a string");
  return v ? v->get<std::string>() : fallback;
}

bool JsonFields::flag(const char* key, bool fallback) {
  const nlohmann::json* v = member(key, &nlohmann::json::is_boolean, "true or false");
  return v ? v->get<bool>() : fallback;
}

JsonFields JsonFields::object(const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* v = m_object ? &empty : nullptr;
  if (m_object) {
    auto it = m_object->find(key);
    if (it != m_object->end()) v = &*it;
  }
  return JsonFields(v, m_where, m_prefix + key + ".", m_status);
}

}  // namespace tl
