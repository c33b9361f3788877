// Host side of honest measurement: fills, poisoning, comparison against a reference, stats.
#include "runtime/core/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

#include "runtime/core/numeric.hpp"
#include "runtime/core/parallel.hpp"

namespace tl {

namespace {

void store_bits(void* data, std::size_t size, std::uint64_t index, std::uint64_t bits) {
  // Little-endian: the low `size` bytes of `bits` are the element.
  std::memcpy(static_cast<unsigned char*>(data) + index * size, &bits, size);
}

}  // namespace

const char* fill_kind_name(Fill::Kind k) {
  switch (k) {
    case Fill::Kind::uniform: return "uniform";
    case Fill::Kind::constant: return "constant";
    case Fill::Kind::zeros: return "zeros";
    case Fill::Kind::data: return "data";
    case Fill::Kind::kv_fp8: return "kv_fp8";
  }
  return "?";
}

namespace {

// Elements [begin, end) of the fill; every element is a function of (seed, index) alone, so any split of the range
// writes the same bytes.
void fill_range(void* data, DType t, std::uint64_t begin, std::uint64_t end, const Fill& fill) {
  const std::size_t size = dtype_size(t);
  switch (fill.kind) {
    case Fill::Kind::uniform: {
      const Fill::Tiles& x = fill.tiles;
      for (std::uint64_t i = begin; i < end; ++i)
        store_bits(data, size, i, num::uniform_fill_bits(static_cast<int>(t), fill.seed, i, fill.lo, fill.hi, x.rows,
                                                         x.cols, x.tile_rows, x.tile_cols));
      return;
    }
    case Fill::Kind::constant:
      for (std::uint64_t i = begin; i < end; ++i) store_element(data, t, i, fill.value);
      return;
    case Fill::Kind::zeros:
      std::memset(static_cast<unsigned char*>(data) + begin * size, 0, (end - begin) * size);
      return;
    case Fill::Kind::data:
      return;  // the caller supplies the bytes
    case Fill::Kind::kv_fp8:
      for (std::uint64_t i = begin; i < end; ++i)
        store_bits(data, size, i, num::kv_fp8_byte(fill.seed, i, fill.lo, fill.hi));
      return;
  }
}

}  // namespace

void fill_host(void* data, DType t, std::uint64_t count, const Fill& fill, unsigned threads) {
  if (fill.kind == Fill::Kind::data || count == 0) return;
  // A uniform element costs tens of nanoseconds (two hash rounds, a rounding): a 5 GB cache (mla.decode at mean
  // s_k 32768) took most of a minute on one core. Large fills are cut into one contiguous chunk per thread.
  parallel_chunks(count, std::uint64_t{1} << 16,  // elements: below this a thread is not worth starting
                  [&](std::uint64_t begin, std::uint64_t end) { fill_range(data, t, begin, end, fill); }, threads);
}

std::vector<std::uint8_t> make_filled(DType t, std::uint64_t count, const Fill& fill) {
  std::vector<std::uint8_t> bytes(count * dtype_size(t));
  fill_host(bytes.data(), t, count, fill);
  return bytes;
}

std::uint64_t poison_bits(DType t) {
  switch (t) {
    case DType::f32: return 0x7FA5A5A5u;  // a signalling NaN: arithmetic never produces it
    case DType::f16: return 0x7DA5u;
    case DType::bf16: return 0x7FA5u;
    case DType::f64: return 0x7FF4A5A5A5A5A5A5ull;
    case DType::e4m3: return 0xFFu;  // e4m3's only NaN patterns are S.1111.111
    case DType::e5m2: return 0x7Du;
    default: return 0xA5A5A5A5A5A5A5A5ull;
  }
}

void poison_host(void* data, DType t, std::uint64_t count) {
  std::size_t size = dtype_size(t);
  std::uint64_t bits = poison_bits(t);
  for (std::uint64_t i = 0; i < count; ++i) store_bits(data, size, i, bits);
}

namespace {

// Elements equal to `bits`, as words of the element's width: a branch-free count the compiler vectorizes (a whole
// 4096 x 4096 output is scanned after every checked run), then the first one only when there is one.
template <typename Word>
UnwrittenCount count_words(const void* data, std::uint64_t count, std::uint64_t bits) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const auto poison = static_cast<Word>(bits);
  auto word = [&](std::uint64_t i) {
    Word w;
    std::memcpy(&w, bytes + i * sizeof(Word), sizeof(Word));
    return w;
  };
  UnwrittenCount r;
  for (std::uint64_t i = 0; i < count; ++i) r.count += word(i) == poison;
  if (r.count > 0)
    while (word(r.first) != poison) ++r.first;
  return r;
}

}  // namespace

UnwrittenCount count_unwritten(const void* data, DType t, std::uint64_t count) {
  const std::uint64_t bits = poison_bits(t);
  switch (dtype_size(t)) {
    case 1: return count_words<std::uint8_t>(data, count, bits);
    case 2: return count_words<std::uint16_t>(data, count, bits);
    case 4: return count_words<std::uint32_t>(data, count, bits);
    case 8: return count_words<std::uint64_t>(data, count, bits);
    default: break;
  }
  const std::size_t size = dtype_size(t);
  const auto* bytes = static_cast<const unsigned char*>(data);
  UnwrittenCount r;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (std::memcmp(bytes + i * size, &bits, size) == 0) {
      if (r.count == 0) r.first = i;
      ++r.count;
    }
  }
  return r;
}

std::vector<std::uint64_t> sample_positions(std::uint64_t count, std::uint64_t max_samples, std::uint64_t seed,
                                            std::uint64_t unit) {
  if (unit > 1 && count % unit == 0 && max_samples != 0 && count > max_samples) {
    std::vector<std::uint64_t> pos;
    for (std::uint64_t u : sample_positions(count / unit, std::max<std::uint64_t>(max_samples / unit, 2), seed))
      for (std::uint64_t e = 0; e < unit; ++e) pos.push_back(u * unit + e);
    return pos;
  }
  std::vector<std::uint64_t> pos;
  if (count == 0) return pos;
  if (max_samples == 0 || count <= max_samples) {
    pos.resize(count);
    std::iota(pos.begin(), pos.end(), std::uint64_t{0});
    return pos;
  }
  const std::uint64_t n = std::max<std::uint64_t>(max_samples, 2);
  pos.resize(n);
  // Stratum i is [i * count / n, (i + 1) * count / n): non-empty and disjoint since count > n, so the picks are
  // distinct and sorted. 128-bit products: count * n may exceed 64 bits.
  auto bound = [&](std::uint64_t i) {
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(i) * count / n);
  };
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t lo = bound(i), width = bound(i + 1) - lo;
    pos[i] = lo + num::hash64(seed, i) % width;
  }
  pos.front() = 0;
  pos.back() = count - 1;
  return pos;
}

Result<Tolerance> tolerance_for(std::string_view precision) {
  if (precision == "f64") return Tolerance{1e-12, 0};
  if (precision == "f32") return Tolerance{1e-5, 0};
  if (precision == "tf32") return Tolerance{5e-4, 0};
  if (precision == "f16" || precision == "bf16") return Tolerance{1e-2, 0};
  if (precision == "e4m3") return Tolerance{6e-2, 0};
  if (precision == "e5m2") return Tolerance{1.2e-1, 0};
  auto t = parse_dtype(precision);
  if (t) return tolerance_for(*t);
  return make_error(ErrorCode::invalid_argument, "no tolerance for precision '" + std::string(precision) +
                                                     "' (known: f64 f32 tf32 f16 bf16 e4m3 e5m2 and integer dtypes)");
}

Tolerance tolerance_for(DType t) {
  if (!dtype_is_float(t)) return {0.0, 0.0};  // integers must match exactly
  return *tolerance_for(dtype_name(t));
}

Comparison compare_values(std::span<const double> out, std::span<const double> reference,
                          std::span<const std::uint64_t> positions, Tolerance tol, std::uint64_t unwritten) {
  Comparison c;
  c.tolerance = tol;
  c.unwritten = unwritten;
  std::size_t n = std::min(out.size(), reference.size());
  double diff2 = 0, ref2 = 0;
  bool have_worst = false;
  std::uint64_t first_bad = 0;
  double first_bad_out = 0, first_bad_ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t where = i < positions.size() ? positions[i] : i;
    double o = out[i], r = reference[i];
    ++c.checked;
    if (!std::isfinite(r)) {
      // A non-finite reference matches only the same non-finite value.
      bool same = (std::isnan(r) && std::isnan(o)) || o == r;
      if (!same && c.nonfinite++ == 0) first_bad = where, first_bad_out = o, first_bad_ref = r;
      continue;
    }
    if (!std::isfinite(o)) {
      if (c.nonfinite++ == 0) first_bad = where, first_bad_out = o, first_bad_ref = r;
      continue;
    }
    double d = std::fabs(o - r);
    diff2 += d * d;
    ref2 += r * r;
    if (!have_worst || d > c.max_abs_error) {
      c.max_abs_error = d;
      c.worst_index = where;
      c.worst_out = o;
      c.worst_ref = r;
      have_worst = true;
    }
  }
  if (c.nonfinite > 0) {
    c.max_abs_error = std::numeric_limits<double>::infinity();
    c.worst_index = first_bad;
    c.worst_out = first_bad_out;
    c.worst_ref = first_bad_ref;
  }
  double norm_ref = std::sqrt(ref2), norm_diff = std::sqrt(diff2);
  c.rel_error = norm_ref > 0 ? norm_diff / norm_ref : (norm_diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);

  char buf[256];
  if (c.checked == 0) {
    c.reason = "nothing was checked";
  } else if (unwritten > 0) {
    std::snprintf(buf, sizeof(buf), "%llu output elements were never written (still poisoned)",
                  static_cast<unsigned long long>(unwritten));
    c.reason = buf;
  } else if (c.nonfinite > 0) {
    std::snprintf(buf, sizeof(buf), "%llu of %llu checked values are NaN/inf where the reference is finite (first at %llu)",
                  static_cast<unsigned long long>(c.nonfinite), static_cast<unsigned long long>(c.checked),
                  static_cast<unsigned long long>(c.worst_index));
    c.reason = buf;
  } else if (!(c.rel_error <= tol.rel)) {
    std::snprintf(buf, sizeof(buf), "relative error %.3g exceeds the tolerance %.3g (max abs error %.3g at %llu: %.6g vs %.6g)",
                  c.rel_error, tol.rel, c.max_abs_error, static_cast<unsigned long long>(c.worst_index), c.worst_out,
                  c.worst_ref);
    c.reason = buf;
  } else if (tol.max_abs > 0 && !(c.max_abs_error <= tol.max_abs)) {
    std::snprintf(buf, sizeof(buf), "max abs error %.3g at %llu exceeds the tolerance %.3g", c.max_abs_error,
                  static_cast<unsigned long long>(c.worst_index), tol.max_abs);
    c.reason = buf;
  }
  c.passed = c.reason.empty();
  return c;
}

Comparison compare_samples(const void* samples, DType t, std::span<const double> reference,
                           std::span<const std::uint64_t> positions, Tolerance tol, std::uint64_t unwritten) {
  std::vector<double> out(reference.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_element(samples, t, i);
  return compare_values(out, reference, positions, tol, unwritten);
}

Stats compute_stats(std::vector<double> samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  std::size_t n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(n - 1));
  }
  return s;
}

void to_json(nlohmann::json& j, const Fill& v) {
  j = {{"kind", fill_kind_name(v.kind)}};
  if (v.kind == Fill::Kind::uniform || v.kind == Fill::Kind::kv_fp8) {
    j["lo"] = v.lo;
    j["hi"] = v.hi;
    j["seed"] = v.seed;
    if (v.tiles.tile_rows > 0) j["tiles"] = {v.tiles.rows, v.tiles.cols, v.tiles.tile_rows, v.tiles.tile_cols};
  } else if (v.kind == Fill::Kind::constant) {
    j["value"] = v.value;
  }
}

Status fill_from_json(const nlohmann::json& j, Fill& out) {
  if (!j.is_object()) return make_error(ErrorCode::parse, "a fill must be an object");
  std::string kind = j.value("kind", "uniform");
  if (kind == "uniform") out.kind = Fill::Kind::uniform;
  else if (kind == "constant") out.kind = Fill::Kind::constant;
  else if (kind == "zeros") out.kind = Fill::Kind::zeros;
  else if (kind == "data") out.kind = Fill::Kind::data;
  else if (kind == "kv_fp8") out.kind = Fill::Kind::kv_fp8;
  else return make_error(ErrorCode::invalid_argument, "unknown fill kind '" + kind + "' (uniform, constant, zeros, data, kv_fp8)");
  out.lo = j.value("lo", -1.0);
  out.hi = j.value("hi", 1.0);
  out.value = j.value("value", 0.0);
  out.seed = j.value("seed", std::uint64_t{1});
  if (j.contains("tiles")) {
    const nlohmann::json& t = j["tiles"];
    if (out.kind != Fill::Kind::uniform || !t.is_array() || t.size() != 4 ||
        !std::all_of(t.begin(), t.end(), [](const nlohmann::json& x) {
                       return x.is_number_integer() && x.get<std::int64_t>() > 0 && x.get<std::int64_t>() <= (1ll << 31);
                     }))
      return make_error(ErrorCode::invalid_argument, "a fill's tiles are a uniform fill's [rows, cols, tile_rows, "
                                                     "tile_cols], four positive integers up to 2^31");
    out.tiles = {t[0].get<std::int64_t>(), t[1].get<std::int64_t>(), t[2].get<std::int64_t>(), t[3].get<std::int64_t>()};
  }
  if ((out.kind == Fill::Kind::uniform || out.kind == Fill::Kind::kv_fp8) && !(out.hi > out.lo))
    return make_error(ErrorCode::invalid_argument, std::string("a ") + fill_kind_name(out.kind) + " fill needs lo < hi");
  return {};
}

void to_json(nlohmann::json& j, const Tolerance& v) { j = {{"rel", v.rel}, {"max_abs", v.max_abs}}; }

void to_json(nlohmann::json& j, const Comparison& v) {
  auto num_or_null = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  j = {{"checked", v.checked},
       {"nonfinite", v.nonfinite},
       {"unwritten", v.unwritten},
       {"rel_error", num_or_null(v.rel_error)},
       {"max_abs_error", num_or_null(v.max_abs_error)},
       {"worst_index", v.worst_index},
       {"worst_out", num_or_null(v.worst_out)},
       {"worst_ref", num_or_null(v.worst_ref)},
       {"tolerance", v.tolerance},
       {"passed", v.passed}};
  if (!v.reason.empty()) j["reason"] = v.reason;
}

void to_json(nlohmann::json& j, const Stats& v) {
  j = {{"count", v.count}, {"median", v.median}, {"min", v.min},
       {"max", v.max},     {"mean", v.mean},     {"stddev", v.stddev}};
}

void from_json(const nlohmann::json& j, Stats& v) {
  v.count = j.value("count", std::size_t{0});
  v.median = j.value("median", 0.0);
  v.min = j.value("min", 0.0);
  v.max = j.value("max", 0.0);
  v.mean = j.value("mean", 0.0);
  v.stddev = j.value("stddev", 0.0);
}

}  // namespace tl
