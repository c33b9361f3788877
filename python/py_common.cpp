// The module's Session and store, the Status -> exception translation, and JSON/parameter conversions.
#include "py_common.hpp"

#include <cmath>
#include <cstdio>

#include "library/library.hpp"

namespace tl::py {

namespace {

std::unique_ptr<Session> g_session;
std::unique_ptr<ResultsStore> g_store;

}  // namespace

void raise(const Status& status) { throw Error{status.code(), status.message()}; }
void raise(ErrorCode code, std::string message) { throw Error{code, std::move(message)}; }

ModuleOptions& options() {
  static ModuleOptions o;
  return o;
}

Session& session() {
  if (!g_session) g_session = take(Session::open(options().session));
  return *g_session;
}

ResultsStore& results_store() {
  if (!g_store) g_store = take(ResultsStore::open(options().db_path));
  return *g_store;
}

void reset_session() {
  g_session.reset();
  g_store.reset();
}

nb::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return nb::none();
    case nlohmann::json::value_t::boolean: return nb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return nb::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return nb::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return nb::float_(j.get<double>());
    case nlohmann::json::value_t::string: return nb::str(j.get_ref<const std::string&>().c_str());
    case nlohmann::json::value_t::array: {
      nb::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case nlohmann::json::value_t::object: {
      nb::dict d;
      for (const auto& [k, v] : j.items()) d[nb::str(k.c_str())] = to_python(v);
      return d;
    }
    default: return nb::none();  // binary and discarded values: TileLab writes neither
  }
}

nlohmann::json to_json(nb::handle o) {
  if (o.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(o)) return nb::cast<bool>(o);
  if (nb::isinstance<nb::int_>(o)) return nb::cast<std::int64_t>(o);
  if (nb::isinstance<nb::float_>(o)) return nb::cast<double>(o);
  if (nb::isinstance<nb::str>(o)) return nb::cast<std::string>(o);
  if (nb::isinstance<nb::dict>(o)) {
    nlohmann::json j = nlohmann::json::object();
    for (auto [k, v] : nb::borrow<nb::dict>(o)) {
      if (!nb::isinstance<nb::str>(k)) throw nb::type_error("dictionary keys must be strings to become JSON");
      j[nb::cast<std::string>(k)] = to_json(v);
    }
    return j;
  }
  if (nb::isinstance<nb::list>(o) || nb::isinstance<nb::tuple>(o)) {
    nlohmann::json j = nlohmann::json::array();
    for (nb::handle v : o) j.push_back(to_json(v));
    return j;
  }
  throw nb::type_error(("cannot turn a " + nb::cast<std::string>(nb::str(o.type().attr("__name__"))) +
                        " into JSON (numbers, strings, booleans, None, lists and dicts)").c_str());
}

std::map<std::string, std::string> param_map(nb::handle o, const std::string& what) {
  std::map<std::string, std::string> m;
  if (o.is_none()) return m;
  if (!nb::isinstance<nb::dict>(o)) throw nb::type_error((what + ": expected a dict of name: value").c_str());
  for (auto [k, v] : nb::borrow<nb::dict>(o)) {
    if (!nb::isinstance<nb::str>(k)) throw nb::type_error((what + ": keys must be parameter names").c_str());
    const std::string key = nb::cast<std::string>(k);
    if (nb::isinstance<nb::bool_>(v)) {
      m[key] = nb::cast<bool>(v) ? "true" : "false";
    } else if (nb::isinstance<nb::int_>(v)) {
      m[key] = std::to_string(nb::cast<long long>(v));
    } else if (nb::isinstance<nb::float_>(v)) {
      const double d = nb::cast<double>(v);
      if (d == std::floor(d) && std::fabs(d) < 9e15) {
        m[key] = std::to_string(static_cast<long long>(d));
      } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", d);
        m[key] = buf;
      }
    } else if (nb::isinstance<nb::str>(v)) {
      m[key] = nb::cast<std::string>(v);
    } else {
      throw nb::type_error((what + "." + key + ": expected a number, string or boolean").c_str());
    }
  }
  return m;
}

nb::dict typed_values(const Schema& schema, const Values& values) {
  nb::dict d;
  for (const ParamSpec& p : schema.params) {
    if (!values.has(p.name)) continue;
    nb::str key(p.name.c_str());
    switch (p.type) {
      case ParamType::int_: d[key] = nb::int_(values.integer(p.name)); break;
      case ParamType::bool_: d[key] = nb::bool_(values.boolean(p.name)); break;
      case ParamType::enum_: d[key] = nb::str(values.text(p.name).c_str()); break;
    }
  }
  return d;
}

const KernelSpec& find_kernel(const std::string& name) { return *take(library_registry().find(name)); }

void set_timing(TimingOptions& timing, const std::string& timer, int graph_launches, const char* who) {
  auto t = parse_timer(timer);
  if (!t) raise(ErrorCode::invalid_argument, std::string(who) + ": timer: " + t.status().message());
  timing.timer = *t;
  timing.graph_launches = graph_launches;
  if (Status st = check_timing(timing); !st.ok()) raise(ErrorCode::invalid_argument, std::string(who) + ": " + st.message());
}

}  // namespace tl::py
