// Roofline model: ceilings and ridges from measured Ceilings, run records as points, JSON/CSV export and import.
#include "runtime/results/roofline.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/core/json_read.hpp"

namespace tl {

// [SECTION] the model

Result<Roofline> Roofline::from_ceilings(const Ceilings& c) {
  auto usable = [](double v) { return std::isfinite(v) && v > 0; };
  if (!usable(c.hbm_bytes_per_s) || !usable(c.fp32_flops))
    return make_error(ErrorCode::invalid_argument,
                      "the ceilings have no HBM bandwidth or FP32 rate: measure them with `tilelab info --measure` "
                      "or pass a device profile");
  Roofline r;
  r.m_ceilings = c;
  auto add = [&](std::vector<RooflineCeiling>& to, const char* name, const char* label, CeilingKind kind, double v) {
    if (usable(v)) to.push_back({name, label, kind, v});
  };
  add(r.m_memory, "hbm_copy", "HBM", CeilingKind::memory, c.hbm_bytes_per_s);
  add(r.m_memory, "l2_read", "L2", CeilingKind::memory, c.l2_bytes_per_s);
  add(r.m_memory, "smem_read", "shared memory", CeilingKind::memory, c.smem_bytes_per_s);
  add(r.m_compute, "fp32_fma", "FP32", CeilingKind::compute, c.fp32_flops);
  add(r.m_compute, "bf16_tensor", "bf16 tensor", CeilingKind::compute, c.bf16_tc_flops);
  add(r.m_compute, "bf16_tensor_sustained", "bf16 tensor, sustained", CeilingKind::compute, c.bf16_tc_sustained_flops);
  add(r.m_compute, "fp16_tensor", "fp16 tensor", CeilingKind::compute, c.fp16_tc_flops);
  add(r.m_compute, "fp8_tensor", "fp8 tensor", CeilingKind::compute, c.fp8_tc_flops);
  return r;
}

const RooflineCeiling* Roofline::find(std::string_view name) const {
  for (const auto* list : {&m_memory, &m_compute})
    for (const auto& c : *list)
      if (c.name == name) return &c;
  return nullptr;
}

const RooflineCeiling& Roofline::top_compute() const {
  return *std::max_element(m_compute.begin(), m_compute.end(),
                           [](const auto& a, const auto& b) { return a.value < b.value; });
}

const RooflineCeiling& Roofline::top_memory() const {
  return *std::max_element(m_memory.begin(), m_memory.end(),
                           [](const auto& a, const auto& b) { return a.value < b.value; });
}

std::vector<RidgePoint> Roofline::ridges() const {
  std::vector<RidgePoint> out;
  for (const auto& m : m_memory)
    for (const auto& c : m_compute) out.push_back({m.name, c.name, c.value / m.value, c.value});
  return out;
}

double Roofline::attainable(double intensity, std::string_view compute, std::string_view memory) const {
  const RooflineCeiling* c = find(compute);
  const RooflineCeiling* m = find(memory);
  if (!c || !m || c->kind != CeilingKind::compute || m->kind != CeilingKind::memory) return 0;
  return std::min(c->value, m->value * intensity);
}

std::string compute_ceiling_for(const Roofline& r, bool tensor_cores, DType input_dtype) {
  // Only kernels whose math runs on the tensor cores are held to them; an elementwise kernel on bf16 is not.
  const char* want = nullptr;
  if (tensor_cores) {
    if (input_dtype == DType::bf16) want = "bf16_tensor";
    else if (input_dtype == DType::f16) want = "fp16_tensor";
    else if (input_dtype == DType::e4m3 || input_dtype == DType::e5m2) want = "fp8_tensor";
  }
  if (want && r.find(want)) return want;
  return "fp32_fma";
}

Result<RooflineBound> roofline_bound(const Roofline& r, std::string_view compute, double flops, double min_bytes) {
  const RooflineCeiling* c = r.find(compute);
  if (!c || c->kind != CeilingKind::compute)
    return make_error(ErrorCode::invalid_argument, "'" + std::string(compute) + "' is not a measured compute ceiling");
  if (!(flops >= 0) || !(min_bytes >= 0) || !std::isfinite(flops) || !std::isfinite(min_bytes))
    return make_error(ErrorCode::invalid_argument, "flops and min_bytes must be finite and non-negative");
  if (min_bytes <= 0)
    return make_error(ErrorCode::invalid_argument, "no minimum bytes: the run has no arithmetic intensity");
  const RooflineCeiling& hbm = r.hbm();
  RooflineBound b;
  const double t_compute = flops / c->value, t_memory = min_bytes / hbm.value;
  // At the ridge both times agree; it counts as compute-bound, as the ridge is where the compute roof starts.
  const bool compute_bound = flops > 0 && t_compute >= t_memory;
  b.bound = compute_bound ? "compute" : "memory";
  b.ceiling = compute_bound ? c->name : hbm.name;
  b.ceiling_value = compute_bound ? c->value : hbm.value;
  b.intensity = flops / min_bytes;
  b.attainable_flops = std::min(c->value, hbm.value * b.intensity);
  b.predicted_s = std::max(t_compute, t_memory);
  return b;
}

// [SECTION] runs as points

namespace {

std::string map_text(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) {
    if (!s.empty()) s += ',';
    s += k + "=" + v;
  }
  return s;
}

Result<std::map<std::string, std::string>> parse_map_text(const std::string& text) {
  std::map<std::string, std::string> m;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(ErrorCode::parse, "'" + item + "' is not key=value");
    m[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return m;
}

// A JSON object of scalars as a string map (numbers written by other tools are kept as their JSON text).
std::map<std::string, std::string> string_map(const nlohmann::json& j) {
  std::map<std::string, std::string> m;
  if (!j.is_object()) return m;
  for (auto it = j.begin(); it != j.end(); ++it) m[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return m;
}

Status expect(const nlohmann::json& j, const char* field, nlohmann::json::value_t type, const char* what) {
  auto it = j.find(field);
  if (it == j.end()) return make_error(ErrorCode::parse, std::string("no \"") + field + "\" (" + what + ")");
  const bool ok = type == nlohmann::json::value_t::number_float ? it->is_number() : it->type() == type;
  if (!ok)
    return make_error(ErrorCode::parse, std::string("\"") + field + "\" is " + it->type_name() + ", expected " + what);
  return Status::success();
}

// A string field, or "" when it is absent or not a string (records from other tools may differ in what they add).
std::string text_field(const nlohmann::json& j, const char* field) {
  if (!j.is_object()) return {};
  auto it = j.find(field);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string record_name(const nlohmann::json& rec) {
  if (!rec.is_object() || !rec.contains("kernel") || !rec["kernel"].is_string()) return "?";
  std::string s = rec["kernel"].get<std::string>();
  if (rec.contains("config")) {
    auto config = string_map(rec["config"]);
    if (!config.empty()) s += " " + map_text(config);
  }
  return s;
}

}  // namespace

double RooflinePoint::actual_intensity() const {
  return dram_bytes && *dram_bytes > 0 ? flops / *dram_bytes : 0.0;
}

std::string RooflinePoint::config_text() const { return map_text(config); }
std::string RooflinePoint::problem_text() const { return map_text(problem); }

std::string RooflinePoint::label() const {
  std::string s = kernel;
  if (!config.empty()) s += " " + config_text();
  if (!problem.empty()) s += " [" + problem_text() + "]";
  return s;
}

Status validate_run_record(const nlohmann::json& rec) {
  using V = nlohmann::json::value_t;
  if (!rec.is_object()) return make_error(ErrorCode::parse, std::string("is ") + rec.type_name() + ", expected a run record object");
  TL_RETURN_IF_ERROR(expect(rec, "kernel", V::string, "the kernel's name, a string"));
  for (const char* f : {"config", "problem"})
    if (rec.contains(f) && !rec[f].is_object())
      return make_error(ErrorCode::parse, std::string("\"") + f + "\" is " + rec[f].type_name() + ", expected an object");
  auto failure = rec.find("failure");
  if (failure != rec.end() && !failure->is_null()) return Status::success();  // kept, reported as skipped
  TL_RETURN_IF_ERROR(expect(rec, "flops", V::number_float, "a number"));
  TL_RETURN_IF_ERROR(expect(rec, "min_bytes", V::number_float, "a number"));
  TL_RETURN_IF_ERROR(expect(rec, "time_ms", V::object, "an object with the time statistics"));
  Status median = expect(rec["time_ms"], "median", V::number_float, "a number");
  if (!median.ok()) return make_error(ErrorCode::parse, "time_ms: " + median.message());
  if (rec["flops"].get<double>() < 0 || rec["min_bytes"].get<double>() < 0)
    return make_error(ErrorCode::parse, "\"flops\" and \"min_bytes\" must not be negative");
  if (auto d = rec.find("dram"); d != rec.end() && !d->is_null()) {
    if (!d->is_object()) return make_error(ErrorCode::parse, std::string("\"dram\" is ") + d->type_name() + ", expected an object");
    if (d->contains("measured") && !(*d)["measured"].is_boolean())
      return make_error(ErrorCode::parse, std::string("dram: \"measured\" is ") + (*d)["measured"].type_name() + ", expected true or false");
    if (d->value("measured", false)) {
      for (const char* f : {"read_bytes", "write_bytes"}) {
        Status s = expect(*d, f, V::number_float, "a number");
        if (!s.ok()) return make_error(ErrorCode::parse, "dram: " + s.message());
      }
    }
  }
  return Status::success();
}

Result<RooflinePoint> roofline_point(const Roofline& r, const nlohmann::json& rec) {
  TL_RETURN_IF_ERROR(validate_run_record(rec));
  if (auto f = rec.find("failure"); f != rec.end() && !f->is_null()) {
    std::string why = f->is_object() ? text_field(*f, "code") + ": " + text_field(*f, "message") : f->dump();
    return make_error(ErrorCode::unsupported, "failed: " + why);
  }
  RooflinePoint p;
  p.kernel = rec["kernel"].get<std::string>();
  p.family = text_field(rec, "family");
  p.device = text_field(rec, "device");
  p.config = string_map(rec.value("config", nlohmann::json::object()));
  p.problem = string_map(rec.value("problem", nlohmann::json::object()));
  p.flops = rec["flops"].get<double>();
  p.min_bytes = rec["min_bytes"].get<double>();
  p.measured_ms = rec["time_ms"]["median"].get<double>();
  if (!(p.measured_ms > 0)) return make_error(ErrorCode::unsupported, "never timed (no median time)");

  // The input type and whether the kernel's math runs on the tensor cores pick the compute ceiling; older records
  // lack them, so fall back to the problem's dtype, then to the ceiling the run was measured against.
  std::string compute;
  if (auto it = rec.find("input_dtype"); it != rec.end() && it->is_string()) p.input_dtype = it->get<std::string>();
  else if (auto d = p.problem.find("dtype"); d != p.problem.end()) p.input_dtype = d->second;
  const auto tc = rec.find("tensor_cores");
  if (!p.input_dtype.empty() && tc != rec.end() && tc->is_boolean()) {
    auto dt = parse_dtype(p.input_dtype);
    if (dt) compute = compute_ceiling_for(r, tc->get<bool>(), *dt);
  }
  if (compute.empty()) {
    const std::string recorded = rec.contains("efficiency") ? text_field(rec["efficiency"], "ceiling") : std::string();
    const RooflineCeiling* c = r.find(recorded);
    compute = c && c->kind == CeilingKind::compute ? recorded : "fp32_fma";
  }
  auto b = roofline_bound(r, compute, p.flops, p.min_bytes);
  if (!b) return make_error(ErrorCode::unsupported, b.status().message());
  const double seconds = p.measured_ms * 1e-3;
  p.intensity = b->intensity;
  p.flops_per_s = p.flops / seconds;
  p.bytes_per_s = p.min_bytes / seconds;
  p.bound = b->bound;
  p.ceiling = b->ceiling;
  p.ceiling_value = b->ceiling_value;
  p.attainable_flops = b->attainable_flops;
  p.predicted_ms = b->predicted_s * 1e3;
  p.efficiency = b->predicted_s / seconds;
  if (auto d = rec.find("dram"); d != rec.end() && d->is_object()) {
    if (d->value("measured", false)) p.dram_bytes = (*d)["read_bytes"].get<double>() + (*d)["write_bytes"].get<double>();
    else p.dram_note = d->contains("reason") ? text_field(*d, "reason") : std::string("not measured");
  }
  return p;
}

// [SECTION] sources

Result<std::vector<nlohmann::json>> parse_run_records(const std::string& text, const std::string& source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return make_error(ErrorCode::parse, source + ": no run records (the file is empty)");
  std::vector<nlohmann::json> records;
  auto whole = parse_json(text, source);
  if (whole) {
    if (whole->is_object()) {
      records.push_back(std::move(*whole));
    } else if (whole->is_array()) {
      for (auto& r : *whole) records.push_back(std::move(r));
      if (records.empty()) return make_error(ErrorCode::parse, source + ": the array holds no run records");
    } else {
      return make_error(ErrorCode::parse, source + ": holds a " + std::string(whole->type_name()) +
                                              "; expected a run record object, an array of them, or JSON lines");
    }
    for (size_t i = 0; i < records.size(); ++i) {
      Status s = validate_run_record(records[i]);
      if (!s.ok())
        return make_error(ErrorCode::parse, source + ": record " + std::to_string(i) + " (" + record_name(records[i]) +
                                                "): " + s.message());
    }
    return records;
  }
  // Not one document: JSON lines, if the first line is an object by itself; otherwise the document's own error.
  std::stringstream in(text);
  std::string line;
  int number = 0;
  bool first_line = true;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(number);
    auto j = parse_json(line, where);
    if (!j || !j->is_object()) {
      if (first_line) return whole.status();
      return j ? make_error(ErrorCode::parse, where + ": is " + std::string(j->type_name()) + ", expected a run record object")
               : j.status();
    }
    first_line = false;
    Status s = validate_run_record(*j);
    if (!s.ok()) return make_error(ErrorCode::parse, where + " (" + record_name(*j) + "): " + s.message());
    records.push_back(std::move(*j));
  }
  return records;
}

Result<std::vector<nlohmann::json>> load_run_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot read run records from " + path + ": no such file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_run_records(text.str(), path);
}

RooflineSet roofline_points(const Roofline& r, const std::vector<nlohmann::json>& records,
                            const std::vector<std::string>& kernels) {
  RooflineSet set;
  for (const auto& rec : records) {
    if (!kernels.empty()) {
      const std::string k = text_field(rec, "kernel");
      if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) continue;
    }
    auto p = roofline_point(r, rec);
    if (p) set.points.push_back(std::move(*p));
    else set.skipped.push_back(record_name(rec) + ": " + p.status().message());
  }
  return set;
}

// [SECTION] export

namespace {

const char* kind_name(CeilingKind k) { return k == CeilingKind::memory ? "memory" : "compute"; }

std::string number_text(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);  // shortest text that reads back to the same double
  return std::string(buf, res.ptr);
}

Result<double> number_of(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto res = std::from_chars(s.data(), end, v);
  if (s.empty() || res.ec != std::errc() || res.ptr != end) return make_error(ErrorCode::parse, "'" + s + "' is not a number");
  return v;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {
      "kernel",   "family",        "config",        "problem",    "device",       "input_dtype", "intensity",
      "flops_per_s", "bound",      "ceiling",    "ceiling_value", "efficiency", "predicted_ms",
      "measured_ms", "flops",      "min_bytes",  "dram_bytes",   "actual_intensity"};
  return cols;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// RFC 4180 rows: quoted fields may hold commas, doubled quotes and line breaks.
Result<std::vector<std::vector<std::string>>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty())
        return make_error(ErrorCode::parse, "line " + std::to_string(line) + ": a quote inside an unquoted field");
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
      ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) return make_error(ErrorCode::parse, "line " + std::to_string(line) + ": a quoted field never ends");
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

nlohmann::json point_to_json(const RooflinePoint& p) {
  return {{"kernel", p.kernel},
          {"family", p.family},
          {"device", p.device},
          {"input_dtype", p.input_dtype},
          {"config", p.config},
          {"problem", p.problem},
          {"label", p.label()},
          {"flops", p.flops},
          {"min_bytes", p.min_bytes},
          {"intensity", p.intensity},
          {"flops_per_s", p.flops_per_s},
          {"bytes_per_s", p.bytes_per_s},
          {"bound", p.bound},
          {"ceiling", p.ceiling},
          {"ceiling_value", p.ceiling_value},
          {"attainable_flops", p.attainable_flops},
          {"efficiency", p.efficiency},
          {"predicted_ms", p.predicted_ms},
          {"measured_ms", p.measured_ms},
          {"dram_bytes", p.dram_bytes ? nlohmann::json(*p.dram_bytes) : nlohmann::json(nullptr)},
          {"actual_intensity", p.actual_intensity()},
          {"dram_note", p.dram_note}};
}

Result<RooflinePoint> point_from_json(const nlohmann::json& j) {
  using V = nlohmann::json::value_t;
  if (!j.is_object()) return make_error(ErrorCode::parse, std::string("is ") + j.type_name() + ", expected an object");
  RooflinePoint p;
  for (auto [field, out] : {std::pair{"kernel", &p.kernel}, {"family", &p.family}, {"device", &p.device},
                            {"input_dtype", &p.input_dtype}, {"bound", &p.bound}, {"ceiling", &p.ceiling}}) {
    TL_RETURN_IF_ERROR(expect(j, field, V::string, "a string"));
    *out = j[field].get<std::string>();
  }
  for (auto [field, out] : {std::pair{"config", &p.config}, {"problem", &p.problem}}) {
    TL_RETURN_IF_ERROR(expect(j, field, V::object, "an object"));
    *out = string_map(j[field]);
  }
  for (auto [field, out] :
       {std::pair{"flops", &p.flops}, {"min_bytes", &p.min_bytes}, {"intensity", &p.intensity},
        {"flops_per_s", &p.flops_per_s}, {"bytes_per_s", &p.bytes_per_s}, {"ceiling_value", &p.ceiling_value},
        {"attainable_flops", &p.attainable_flops}, {"efficiency", &p.efficiency}, {"predicted_ms", &p.predicted_ms},
        {"measured_ms", &p.measured_ms}}) {
    TL_RETURN_IF_ERROR(expect(j, field, V::number_float, "a number"));
    *out = j[field].get<double>();
  }
  if (auto d = j.find("dram_bytes"); d != j.end() && !d->is_null()) {
    if (!d->is_number()) return make_error(ErrorCode::parse, std::string("\"dram_bytes\" is ") + d->type_name() + ", expected a number or null");
    p.dram_bytes = d->get<double>();
  }
  p.dram_note = text_field(j, "dram_note");
  return p;
}

nlohmann::json roofline_to_json(const Roofline& r, const std::vector<RooflinePoint>& points) {
  nlohmann::json ceilings = nlohmann::json::array(), ridges = nlohmann::json::array(), pts = nlohmann::json::array();
  for (const auto* list : {&r.memory(), &r.compute()})
    for (const auto& c : *list)
      ceilings.push_back({{"name", c.name}, {"label", c.label}, {"kind", kind_name(c.kind)}, {"value", c.value}});
  for (const auto& rp : r.ridges())
    ridges.push_back({{"memory", rp.memory}, {"compute", rp.compute}, {"intensity", rp.intensity}, {"flops", rp.flops}});
  for (const auto& p : points) pts.push_back(point_to_json(p));
  return {{"format", "tilelab.roofline"},
          {"version", 1},
          {"device", r.ceilings().device_name},
          {"measured_at", r.ceilings().measured_at},
          {"ceilings", std::move(ceilings)},
          {"ridges", std::move(ridges)},
          {"points", std::move(pts)}};
}

Result<std::vector<RooflinePoint>> points_from_json(const nlohmann::json& doc) {
  if (text_field(doc, "format") != "tilelab.roofline")
    return make_error(ErrorCode::parse, "not a roofline export (no \"format\": \"tilelab.roofline\")");
  if (!doc.contains("points") || !doc["points"].is_array())
    return make_error(ErrorCode::parse, "no \"points\" array");
  std::vector<RooflinePoint> out;
  for (size_t i = 0; i < doc["points"].size(); ++i) {
    auto p = point_from_json(doc["points"][i]);
    if (!p) return make_error(ErrorCode::parse, "point " + std::to_string(i) + ": " + p.status().message());
    out.push_back(std::move(*p));
  }
  return out;
}

std::string points_to_csv(const std::vector<RooflinePoint>& points) {
  std::string out;
  for (size_t i = 0; i < csv_columns().size(); ++i) {
    if (i) out += ',';
    out += csv_columns()[i];
  }
  out += '\n';
  for (const auto& p : points) {
    const std::vector<std::string> f = {
        p.kernel, p.family, p.config_text(), p.problem_text(), p.device, p.input_dtype, number_text(p.intensity),
        number_text(p.flops_per_s), p.bound, p.ceiling, number_text(p.ceiling_value), number_text(p.efficiency),
        number_text(p.predicted_ms), number_text(p.measured_ms), number_text(p.flops), number_text(p.min_bytes),
        p.dram_bytes ? number_text(*p.dram_bytes) : std::string(), number_text(p.actual_intensity())};
    for (size_t i = 0; i < f.size(); ++i) {
      if (i) out += ',';
      out += csv_field(f[i]);
    }
    out += '\n';
  }
  return out;
}

Result<std::vector<RooflinePoint>> points_from_csv(const std::string& text) {
  auto rows = parse_csv(text);
  if (!rows) return rows.status();
  if (rows->empty()) return make_error(ErrorCode::parse, "empty: no header line");
  const auto& header = rows->front();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const auto& name : csv_columns())
    if (!col.count(name)) return make_error(ErrorCode::parse, "line 1: the header has no column '" + name + "'");
  std::vector<RooflinePoint> out;
  for (size_t r = 1; r < rows->size(); ++r) {
    const auto& row = (*rows)[r];
    const std::string where = "row " + std::to_string(r + 1);
    if (row.size() != header.size())
      return make_error(ErrorCode::parse, where + ": " + std::to_string(row.size()) + " fields, the header has " +
                                              std::to_string(header.size()));
    auto at = [&](const char* name) -> const std::string& { return row[col.at(name)]; };
    RooflinePoint p;
    p.kernel = at("kernel");
    p.family = at("family");
    p.device = at("device");
    p.input_dtype = at("input_dtype");
    p.bound = at("bound");
    p.ceiling = at("ceiling");
    for (auto [name, out_map] : {std::pair{"config", &p.config}, {"problem", &p.problem}}) {
      auto m = parse_map_text(at(name));
      if (!m) return make_error(ErrorCode::parse, where + ", column " + name + ": " + m.status().message());
      *out_map = std::move(*m);
    }
    for (auto [name, out_num] :
         {std::pair{"intensity", &p.intensity}, {"flops_per_s", &p.flops_per_s}, {"ceiling_value", &p.ceiling_value},
          {"efficiency", &p.efficiency}, {"predicted_ms", &p.predicted_ms}, {"measured_ms", &p.measured_ms},
          {"flops", &p.flops}, {"min_bytes", &p.min_bytes}}) {
      auto v = number_of(at(name));
      if (!v) return make_error(ErrorCode::parse, where + ", column " + name + ": " + v.status().message());
      *out_num = *v;
    }
    if (!at("dram_bytes").empty()) {
      auto v = number_of(at("dram_bytes"));
      if (!v) return make_error(ErrorCode::parse, where + ", column dram_bytes: " + v.status().message());
      p.dram_bytes = *v;
    }
    // Derived columns the CSV leaves out of its round trip come back from the ones it keeps.
    p.bytes_per_s = p.measured_ms > 0 ? p.min_bytes / (p.measured_ms * 1e-3) : 0;
    p.attainable_flops = p.bound == "compute" ? p.ceiling_value : p.ceiling_value * p.intensity;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tl
