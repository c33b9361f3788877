// Schema validation, key=value parsing, arch limits and host tensors (instantiate() is in registry.cpp).
#include "runtime/spec/kernel_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

namespace tl {

// [SECTION] ParamSpec

ParamSpec ParamSpec::integer(std::string name, std::int64_t def, std::int64_t min, std::int64_t max, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::int_;
  p.min = min;
  p.max = max;
  p.default_value = std::to_string(def);
  p.help = std::move(help);
  return p;
}

ParamSpec ParamSpec::one_of(std::string name, std::int64_t def, std::vector<std::int64_t> values, std::string help) {
  ParamSpec p = integer(std::move(name), def, 0, 0, std::move(help));
  for (auto v : values) p.choices.push_back(std::to_string(v));
  p.min = *std::min_element(values.begin(), values.end());
  p.max = *std::max_element(values.begin(), values.end());
  return p;
}

ParamSpec ParamSpec::enumeration(std::string name, std::string def, std::vector<std::string> values, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::enum_;
  p.choices = std::move(values);
  p.default_value = std::move(def);
  p.help = std::move(help);
  return p;
}

ParamSpec ParamSpec::boolean(std::string name, bool def, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::bool_;
  p.default_value = def ? "true" : "false";
  p.help = std::move(help);
  return p;
}

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  if (s == "true" || s == "1" || s == "on" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "off" || s == "no") return false;
  return std::nullopt;
}

}  // namespace

std::string ParamSpec::describe_allowed() const {
  switch (type) {
    case ParamType::int_:
      if (!choices.empty()) return "one of " + join(choices);
      return std::to_string(min) + ".." + std::to_string(max);
    case ParamType::enum_: return "one of " + join(choices);
    case ParamType::bool_: return "true or false";
  }
  return {};
}

std::string ParamSpec::describe_default() const { return default_from.empty() ? default_value : "= " + default_from; }

ParamSpec ParamSpec::follows(const ParamSpec& other) const {
  ParamSpec p = *this;
  p.default_from = other.name;
  p.default_value = other.default_value;
  return p;
}

// [SECTION] Values and Schema

std::int64_t Values::integer(const std::string& name) const { return std::stoll(m_values.at(name)); }
bool Values::boolean(const std::string& name) const { return m_values.at(name) == "true"; }
const std::string& Values::text(const std::string& name) const { return m_values.at(name); }
DType Values::dtype(const std::string& name) const {
  auto t = parse_dtype(m_values.at(name));
  if (!t) throw std::out_of_range("not a dtype: " + m_values.at(name));
  return *t;
}

std::string Values::to_string() const {
  std::string out;
  for (const auto& [k, v] : m_values) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

const ParamSpec* Schema::find(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

Values Schema::defaults() const {
  Values v;
  for (const auto& p : params) v.set(p.name, p.default_value);
  return v;
}

std::string Schema::value_of(const std::string& name, const std::map<std::string, std::string>& given) const {
  const ParamSpec* own = find(name);
  if (!own) return {};
  const ParamSpec* p = own;
  // Follow default_from while unset; back at the start (seq_q and seq_k follow each other, both unset) or past
  // every parameter, the own default holds.
  for (std::size_t hops = 0; hops <= params.size(); ++hops) {
    if (auto it = given.find(p->name); it != given.end()) return it->second;
    const ParamSpec* next = p->default_from.empty() ? nullptr : find(p->default_from);
    if (!next) return p->default_value;
    if (next == own) break;
    p = next;
  }
  return own->default_value;
}

Result<Values> Schema::resolve(const std::map<std::string, std::string>& given, const std::string& what) const {
  Values v = defaults();
  // Checks one value against its parameter and stores it in canonical form.
  auto apply = [&](const ParamSpec& p, const std::string& raw, const std::string& origin) -> Status {
    const std::string& key = p.name;
    auto bad = [&](const std::string& why) {
      return make_error(ErrorCode::invalid_argument, what + " " + key + "=" + raw + origin + ": " + why + " (" + p.help + ")");
    };
    switch (p.type) {
      case ParamType::int_: {
        auto i = parse_int(raw);
        if (!i) return bad("not an integer; expected " + p.describe_allowed());
        if (!p.choices.empty()) {
          if (std::find(p.choices.begin(), p.choices.end(), std::to_string(*i)) == p.choices.end())
            return bad("must be " + p.describe_allowed());
        } else if (*i < p.min || *i > p.max) {
          return bad("out of range " + p.describe_allowed());
        }
        v.set(key, std::to_string(*i));
        break;
      }
      case ParamType::enum_: {
        std::string canon = raw;
        if (key == "dtype") {  // accept aliases ("fp16", "half") but store the canonical name
          if (auto t = parse_dtype(raw)) canon = dtype_name(*t);
        }
        if (std::find(p.choices.begin(), p.choices.end(), canon) == p.choices.end())
          return bad("must be " + p.describe_allowed());
        v.set(key, canon);
        break;
      }
      case ParamType::bool_: {
        auto b = parse_bool(raw);
        if (!b) return bad("must be true or false");
        v.set(key, *b ? "true" : "false");
        break;
      }
    }
    return {};
  };
  for (const auto& [key, raw] : given) {
    const ParamSpec* p = find(key);
    if (!p) {
      std::vector<std::string> names;
      for (const auto& q : params) names.push_back(q.name);
      const auto hint = elsewhere.find(key);
      return make_error(ErrorCode::invalid_argument, "unknown " + what + " key '" + key + "'" +
                                                         (hint == elsewhere.end() ? "" : ": " + hint->second) +
                                                         " (valid: " + (names.empty() ? "none" : join(names)) + ")");
    }
    TL_RETURN_IF_ERROR(apply(*p, raw, ""));
  }
  // Unset parameters that follow another take its value (checked: it may lie outside their own range).
  for (const auto& p : params) {
    if (p.default_from.empty() || given.count(p.name) || !find(p.default_from)) continue;
    TL_RETURN_IF_ERROR(apply(p, value_of(p.name, given), " (unset: = " + p.default_from + ")"));
  }
  return v;
}

Result<std::map<std::string, std::string>> parse_key_values(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      return s;
    };
    item = trim(item);
    if (!item.empty()) {
      auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        return make_error(ErrorCode::invalid_argument, "'" + item + "' is not key=value (write e.g. block_M=64,block_N=64)");
      std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
      if (!out.emplace(key, value).second)
        return make_error(ErrorCode::invalid_argument, "key '" + key + "' given twice");
    }
    start = end + 1;
  }
  return out;
}

// [SECTION] limits, tensors

DeviceLimits limits_for_arch(const std::string& arch) {
  DeviceLimits l;
  l.arch = arch;
  static const std::regex form(R"(sm_(\d+)[af]?)");
  std::smatch m;
  l.cc = std::regex_match(arch, m, form) ? std::stoi(m[1].str()) : 80;
  // CUDA programming guide, "Technical Specifications per Compute Capability": opt-in shared memory per block.
  switch (l.cc) {
    case 80: case 87: l.smem_per_block_optin = 166912; break;        // 163 KiB
    case 90: case 100: case 103: case 110: l.smem_per_block_optin = 232448; break;  // 227 KiB
    case 75: l.smem_per_block_optin = 65536; break;                   // 64 KiB
    default: l.smem_per_block_optin = 101376; break;                  // 99 KiB: sm_86, sm_89, sm_120
  }
  // SMs of the arch's flagship part (compiling without a GPU sizes persistent grids for it): A100 108, H100 SXM 132,
  // B200 148; others 132 too. A real device replaces it (limits_for_device).
  l.sm_count = l.cc == 80 ? 108 : l.cc == 100 ? 148 : 132;
  // Their L2 (product briefs): A100 40 MiB, H100 SXM 50 MiB, B200 126 MiB; others as the H100.
  l.l2_bytes = std::int64_t{l.cc == 80 ? 40 : l.cc == 100 ? 126 : 50} << 20;
  return l;
}

DeviceLimits limits_for_device(const DeviceInfo& d) {
  const int cc = d.cc_major * 10 + d.cc_minor;
  DeviceLimits l = limits_for_arch("sm_" + std::to_string(cc) + (cc == 90 || cc == 100 ? "a" : ""));
  if (d.smem_per_block_optin > 0) l.smem_per_block_optin = d.smem_per_block_optin;
  if (d.sm_count > 0) l.sm_count = d.sm_count;
  if (d.l2_bytes > 0) l.l2_bytes = static_cast<std::int64_t>(d.l2_bytes);
  return l;
}

std::int64_t ArgSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

ArgSpec ArgSpec::tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, ArgRole role, Fill fill) {
  ArgSpec a;
  a.kind = Kind::tensor;
  a.name = std::move(name);
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.role = role;
  a.fill = fill;
  if (role == ArgRole::out) a.fill.kind = Fill::Kind::zeros;
  return a;
}

ArgSpec ArgSpec::i32_data(std::string name, const std::vector<std::int32_t>& values) {
  ArgSpec a = tensor(std::move(name), DType::i32, {static_cast<std::int64_t>(values.size())}, ArgRole::in);
  a.fill.kind = Fill::Kind::data;
  a.data.resize(values.size() * sizeof(std::int32_t));
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

ArgSpec ArgSpec::scalar(std::string name, DType dtype, double value) {
  ArgSpec a;
  a.kind = Kind::scalar;
  a.name = std::move(name);
  a.dtype = dtype;
  a.value = value;
  a.fill.kind = Fill::Kind::zeros;
  return a;
}

ArgSpec ArgSpec::tensor_map(std::string name, std::string tensor_of, std::vector<std::int64_t> box, int swizzle_bytes) {
  ArgSpec a;
  a.kind = Kind::tensor_map;
  a.name = std::move(name);
  a.tensor_of = std::move(tensor_of);
  a.box = std::move(box);
  a.swizzle_bytes = swizzle_bytes;
  a.fill.kind = Fill::Kind::zeros;
  return a;
}

std::int64_t HostTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

HostTensor make_host_tensor(const ArgSpec& arg) {
  HostTensor t;
  t.name = arg.name;
  t.dtype = arg.dtype;
  t.shape = arg.shape;
  if (arg.fill.kind == Fill::Kind::data) {
    t.data = arg.data;
    t.data.resize(arg.bytes());
    return t;
  }
  t.data.assign(arg.bytes(), 0);
  fill_host(t.data.data(), arg.dtype, static_cast<std::uint64_t>(arg.numel()), arg.fill);
  return t;
}

// [SECTION] compile requests, models, baselines (instantiate and validate: registry.cpp)

CompileRequest compile_request(const KernelInstance& k, JitOptions options) {
  CompileRequest r;
  r.source = k.source;
  r.name_expression = k.name_expression;
  r.options = std::move(options);
  r.context = k.spec->name + " [" + k.config.to_string() + "]";
  return r;
}

Result<Timeline> model_timeline(const KernelInstance& instance, const ModelDevice& device) {
  if (!instance.spec) return make_error(ErrorCode::invalid_argument, "model_timeline: an instance without a spec");
  if (!instance.spec->model_timeline)
    return make_error(ErrorCode::unsupported, "no timeline model for " + instance.spec->name +
                                                  " (`tilelab kernels --json` marks the kernels that have one: "
                                                  "\"model_timeline\": true)");
  return instance.spec->model_timeline(instance, device);
}

std::string spec_baseline_library(const KernelSpec& spec) {
  if (!spec.baseline) return "";
  auto problem = spec.problem.resolve({}, "problem");
  auto config = spec.config.resolve({}, "config");
  if (!problem || !config) return "";
  const std::optional<BaselineSpec> b = spec.baseline(*problem, *config);
  return b ? baseline_library(b->kind) : "";
}

// [SECTION] JSON

void to_json(nlohmann::json& j, const ParamSpec& p) {
  const char* type = p.type == ParamType::int_ ? "int" : p.type == ParamType::enum_ ? "enum" : "bool";
  j = {{"name", p.name}, {"type", type}, {"default", p.default_value}, {"help", p.help}, {"allowed", p.describe_allowed()}};
  if (!p.default_from.empty()) j["default_from"] = p.default_from;
  if (!p.choices.empty()) j["choices"] = p.choices;
  if (p.type == ParamType::int_ && p.choices.empty()) {
    j["min"] = p.min;
    j["max"] = p.max;
  }
}

void to_json(nlohmann::json& j, const KernelSpec& k) {
  j = {{"name", k.name},     {"family", k.family},           {"summary", k.summary},
       {"hidden", k.hidden}, {"source", k.source},           {"archs", k.archs},
       {"config", k.config.params}, {"problem", k.problem.params}, {"probes", k.probes},
       {"tensor_cores", k.tensor_cores}, {"model_timeline", static_cast<bool>(k.model_timeline)}};
  const std::string baseline = spec_baseline_library(k);
  j["baseline"] = baseline.empty() ? nlohmann::json() : nlohmann::json(baseline);
}

void to_json(nlohmann::json& j, const ArgSpec& a) {
  static const char* roles[] = {"in", "out", "inout", "scratch"};
  if (a.kind == ArgSpec::Kind::scalar) {
    j = {{"name", a.name}, {"kind", "scalar"}, {"dtype", dtype_name(a.dtype)}, {"value", a.value}};
    return;
  }
  if (a.kind == ArgSpec::Kind::tensor_map) {
    j = {{"name", a.name}, {"kind", "tensor_map"}, {"tensor", a.tensor_of}, {"box", a.box}, {"swizzle_bytes", a.swizzle_bytes}};
    return;
  }
  j = {{"name", a.name},
       {"kind", "tensor"},
       {"dtype", dtype_name(a.dtype)},
       {"shape", a.shape},
       {"role", roles[static_cast<int>(a.role)]},
       {"fill", a.fill}};
  if (!a.is_param) j["is_param"] = false;
}

}  // namespace tl
