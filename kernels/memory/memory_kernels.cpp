// Host specs of the memory-bound kernels: copy, elementwise, rmsnorm, softmax.
#include <cmath>
#include <map>

#include "memory/memory_plan.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

const std::vector<std::string> kDtypes = {"f32", "f16", "bf16"};

// Rounding of the output type, scaled by the largest output magnitude expected from the fills.
Tolerance storage_tolerance(DType t, double magnitude) {
  switch (t) {
    case DType::f16: return {1e-3, 2e-3 * magnitude};   // 2^-11 relative rounding, twice for margin
    case DType::bf16: return {8e-3, 1.6e-2 * magnitude};  // 2^-8
    default: return {1e-5, 1e-5 * magnitude};           // float arithmetic and reductions
  }
}

ParamSpec vec_param(std::int64_t def) {
  return ParamSpec::one_of("vec", def, {1, 2, 4, 8}, "elements per vector load/store (vec * element size <= 16 bytes)");
}
ParamSpec threads_param(std::int64_t def) {
  return ParamSpec::integer("threads", def, 32, 1024, "threads per block (a multiple of 32)");
}

// The config's vec; 0 (the row kernels' auto) takes 4, or the largest of 2 and 1 that divides cols.
std::int64_t vec_of(const Values& p, const Values& c) {
  if (const auto vec = c.integer("vec"); vec != 0) return vec;
  const auto cols = p.integer("cols");
  return cols % 4 == 0 ? 4 : cols % 2 == 0 ? 2 : 1;
}

Status check_threads_vec(const Values& p, const Values& c) {
  const auto threads = c.integer("threads"), vec = vec_of(p, c);
  if (threads % 32 != 0)
    return make_error(ErrorCode::unsupported, "threads=" + std::to_string(threads) +
                                                  " is not a multiple of 32 (a warp): use " +
                                                  std::to_string((threads + 31) / 32 * 32));
  const auto bytes = vec * static_cast<std::int64_t>(dtype_size(p.dtype()));
  if (bytes > 16)
    return make_error(ErrorCode::unsupported, "vec=" + std::to_string(vec) + " with " + p.text("dtype") + " is " +
                                                  std::to_string(bytes) + " bytes per access; the widest is 16: use vec=" +
                                                  std::to_string(16 / dtype_size(p.dtype())) + " or less");
  return Status::success();
}

ElemType elem_type(const Values& p) {
  switch (p.dtype()) {
    case DType::f16: return ElemType::f16;
    case DType::bf16: return ElemType::bf16;
    default: return ElemType::f32;  // the schemas offer f32, f16 and bf16
  }
}

FlatConfig flat_config(const Values& p, const Values& c) {
  return {.dtype = elem_type(p), .vec = static_cast<int>(c.integer("vec")), .threads = static_cast<int>(c.integer("threads"))};
}

RowsConfig rows_config(const Values& p, const Values& c, int cached) {
  return {.dtype = elem_type(p),
          .vec = static_cast<int>(vec_of(p, c)),
          .threads = static_cast<int>(c.integer("threads")),
          .rows_per_block = static_cast<int>(c.integer("rows_per_block")),
          .cached = cached};
}

Schema flat_problem() {
  return {{ParamSpec::integer("n", 1 << 24, 1, std::int64_t(1) << 36, "number of elements"),
           ParamSpec::enumeration("dtype", "f32", kDtypes, "element type")}};
}

Schema rows_problem() {
  return {{ParamSpec::integer("rows", 4096, 1, 1 << 30, "number of rows (independent problems)"),
           ParamSpec::integer("cols", 4096, 1, 1 << 24, "row length (the reduced dimension)"),
           ParamSpec::enumeration("dtype", "f32", kDtypes, "element type")}};
}

Schema rows_schema() {
  return {{ParamSpec::one_of("vec", 0, {0, 1, 2, 4, 8},
                             "elements per vector load/store (vec * element size <= 16 bytes); 0 = auto: 4, or 2 or 1 "
                             "where that does not divide cols"),
           threads_param(256),
           ParamSpec::one_of("rows_per_block", 1, {1, 2, 4, 8, 16, 32}, "rows one block handles (threads split evenly)")}};
}

LaunchGeometry flat_launch(const Values& p, const Values& c, const DeviceLimits&) {
  const auto per_block = c.integer("threads") * c.integer("vec");
  LaunchGeometry g;
  g.grid.x = static_cast<unsigned>((p.integer("n") + per_block - 1) / per_block);
  g.block.x = static_cast<unsigned>(c.integer("threads"));
  return g;
}

Status check_flat(const Values& p, const Values& c, const DeviceLimits&) {
  TL_RETURN_IF_ERROR(check_threads_vec(p, c));
  const auto blocks = (p.integer("n") + c.integer("threads") * c.integer("vec") - 1) / (c.integer("threads") * c.integer("vec"));
  if (blocks > 0x7fffffff)
    return make_error(ErrorCode::unsupported, "n=" + p.text("n") + " needs " + std::to_string(blocks) +
                                                  " blocks, over the grid limit 2^31-1: raise vec or threads");
  return Status::success();
}

Status check_rows(const Values& p, const Values& c, const DeviceLimits&) {
  TL_RETURN_IF_ERROR(check_threads_vec(p, c));
  const auto threads = c.integer("threads"), rpb = c.integer("rows_per_block"), vec = vec_of(p, c);
  if (threads % rpb != 0 || (threads / rpb) % 32 != 0)
    return make_error(ErrorCode::unsupported, "threads=" + std::to_string(threads) + " split over rows_per_block=" +
                                                  std::to_string(rpb) + " gives " + std::to_string(threads / rpb) +
                                                  " threads per row; each row needs whole warps (a multiple of 32): "
                                                  "lower rows_per_block or raise threads");
  if (p.integer("cols") % vec != 0)
    return make_error(ErrorCode::unsupported, "cols=" + p.text("cols") + " is not a multiple of vec=" +
                                                  std::to_string(vec) + ": use a vec that divides the row length");
  return Status::success();
}

LaunchGeometry rows_launch(const Values& p, const Values& c, const DeviceLimits&) {
  LaunchGeometry g;
  const auto rpb = c.integer("rows_per_block");
  g.grid.x = static_cast<unsigned>((p.integer("rows") + rpb - 1) / rpb);
  g.block.x = static_cast<unsigned>(c.integer("threads"));
  return g;
}

double elem_bytes(const Values& p) { return static_cast<double>(dtype_size(p.dtype())); }

// Per-row statistics computed once per reference call, since sampled indices often share rows.
template <class F>
std::vector<double> per_row(const HostTensor& x, const std::vector<std::int64_t>& idx, F row_fn) {
  const std::int64_t cols = x.shape.at(1);
  std::map<std::int64_t, std::vector<double>> rows;
  std::vector<double> out;
  out.reserve(idx.size());
  for (auto i : idx) {
    const std::int64_t r = i / cols;
    auto it = rows.find(r);
    if (it == rows.end()) {
      std::vector<double> v(cols);
      for (std::int64_t c = 0; c < cols; ++c) v[c] = x.at(r * cols + c);
      it = rows.emplace(r, row_fn(r, v)).first;
    }
    out.push_back(it->second[i % cols]);
  }
  return out;
}

KernelSpec copy_spec() {
  KernelSpec k;
  k.name = "copy";
  k.family = "memory";
  k.summary = "y = x; the bandwidth yardstick (read + write)";
  k.source = "memory/copy.cuh";
  k.problem = flat_problem();
  k.config = {{vec_param(4), threads_param(256)}};
  k.can_implement = check_flat;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression("copy", flat_config(p, c)); };
  k.launch = flat_launch;
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    const auto n = p.integer("n");
    return std::vector<ArgSpec>{ArgSpec::tensor("x", p.dtype(), {n}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
                                ArgSpec::tensor("y", p.dtype(), {n}, ArgRole::out),
                                ArgSpec::scalar("n", DType::i64, static_cast<double>(n))};
  };
  k.flops = [](const Values&) { return 0.0; };
  k.min_bytes = [](const Values& p) { return 2.0 * static_cast<double>(p.integer("n")) * elem_bytes(p); };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    std::vector<double> out;
    for (auto i : idx) out.push_back(in.tensor("x").at(i));
    return out;
  };
  k.tolerance = [](const Values&, DType) { return Tolerance{0, 0}; };  // a copy is exact
  k.layouts = [](const Values& p, const Values& c) {
    return std::vector<LayoutInfo>{{"thread_vectors", to_string(thread_vectors(flat_config(p, c)))}};
  };
  return k;
}

KernelSpec elementwise_spec() {
  KernelSpec k = copy_spec();
  k.name = "elementwise";
  k.summary = "out = a*x + b*y (a = 2, b = -1), float arithmetic";
  k.source = "memory/elementwise.cuh";
  k.name_expression = [](const Values& p, const Values& c) { return name_expression("elementwise", flat_config(p, c)); };
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    const auto n = p.integer("n");
    return std::vector<ArgSpec>{ArgSpec::tensor("x", p.dtype(), {n}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
                                ArgSpec::tensor("y", p.dtype(), {n}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2}),
                                ArgSpec::tensor("out", p.dtype(), {n}, ArgRole::out),
                                ArgSpec::scalar("a", DType::f32, 2.0),
                                ArgSpec::scalar("b", DType::f32, -1.0),
                                ArgSpec::scalar("n", DType::i64, static_cast<double>(n))};
  };
  k.flops = [](const Values& p) { return 3.0 * static_cast<double>(p.integer("n")); };
  k.min_bytes = [](const Values& p) { return 3.0 * static_cast<double>(p.integer("n")) * elem_bytes(p); };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    const double a = in.scalars.at("a"), b = in.scalars.at("b");
    std::vector<double> out;
    for (auto i : idx) out.push_back(a * in.tensor("x").at(i) + b * in.tensor("y").at(i));
    return out;
  };
  k.tolerance = [](const Values&, DType t) { return storage_tolerance(t, 3.0); };
  return k;
}

KernelSpec rmsnorm_spec() {
  KernelSpec k;
  k.name = "rmsnorm";
  k.family = "memory";
  k.summary = "y = x / sqrt(mean(x^2) + eps) * w per row (eps = 1e-6)";
  k.source = "memory/rmsnorm.cuh";
  k.problem = rows_problem();
  k.config = rows_schema();
  k.can_implement = check_rows;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression("rmsnorm", rows_config(p, c, 0)); };
  k.launch = rows_launch;
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    const auto rows = p.integer("rows"), cols = p.integer("cols");
    return std::vector<ArgSpec>{
        ArgSpec::tensor("x", p.dtype(), {rows, cols}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
        ArgSpec::tensor("w", p.dtype(), {cols}, ArgRole::in, {.lo = 0.5, .hi = 1.5, .seed = 2}),
        ArgSpec::tensor("y", p.dtype(), {rows, cols}, ArgRole::out),
        ArgSpec::scalar("rows", DType::i32, static_cast<double>(rows)),
        ArgSpec::scalar("cols", DType::i32, static_cast<double>(cols)),
        ArgSpec::scalar("eps", DType::f32, 1e-6)};
  };
  k.flops = [](const Values& p) { return 4.0 * static_cast<double>(p.integer("rows")) * static_cast<double>(p.integer("cols")); };
  k.min_bytes = [](const Values& p) {
    const double rows = static_cast<double>(p.integer("rows")), cols = static_cast<double>(p.integer("cols"));
    return (2.0 * rows * cols + cols) * elem_bytes(p);
  };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    const HostTensor& w = in.tensor("w");
    const double eps = in.scalars.at("eps");
    return per_row(in.tensor("x"), idx, [&](std::int64_t, std::vector<double> v) {
      double ss = 0;
      for (double f : v) ss += f * f;
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(v.size()) + eps);
      for (std::size_t c = 0; c < v.size(); ++c) v[c] *= inv * w.at(static_cast<std::int64_t>(c));
      return v;
    });
  };
  // |x| < 2 (a row's rms near 1.15) and w < 1.5: |y| rarely passes 3.
  k.tolerance = [](const Values&, DType t) { return storage_tolerance(t, 8.0); };
  return k;
}

KernelSpec softmax_spec() {
  KernelSpec k = rmsnorm_spec();
  k.name = "softmax";
  k.summary = "y = exp(x - max) / sum(exp(x - max)) per row";
  k.source = "memory/softmax.cuh";
  // Rows of up to kSoftmaxCached vectors per thread are read once and held in registers (CACHED > 0); longer rows
  // take the two-read path (CACHED = 0).
  k.name_expression = [](const Values& p, const Values& c) {
    constexpr std::int64_t kSoftmaxCached = 16;
    const auto vec = vec_of(p, c), threads = c.integer("threads"), rpb = c.integer("rows_per_block");
    const auto per_pass = threads / rpb * vec;
    const auto chunks = (p.integer("cols") + per_pass - 1) / per_pass;
    return name_expression("softmax", rows_config(p, c, static_cast<int>(chunks <= kSoftmaxCached ? chunks : 0)));
  };
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    const auto rows = p.integer("rows"), cols = p.integer("cols");
    return std::vector<ArgSpec>{
        ArgSpec::tensor("x", p.dtype(), {rows, cols}, ArgRole::in, {.lo = -4, .hi = 4, .seed = 1}),
        ArgSpec::tensor("y", p.dtype(), {rows, cols}, ArgRole::out),
        ArgSpec::scalar("rows", DType::i32, static_cast<double>(rows)),
        ArgSpec::scalar("cols", DType::i32, static_cast<double>(cols))};
  };
  k.flops = [](const Values& p) { return 5.0 * static_cast<double>(p.integer("rows")) * static_cast<double>(p.integer("cols")); };
  k.min_bytes = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("rows")) * static_cast<double>(p.integer("cols")) * elem_bytes(p);
  };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    return per_row(in.tensor("x"), idx, [](std::int64_t, std::vector<double> v) {
      double m = v[0], s = 0;
      for (double f : v) m = std::max(m, f);
      for (double& f : v) s += (f = std::exp(f - m));
      for (double& f : v) f /= s;
      return v;
    });
  };
  k.tolerance = [](const Values&, DType t) { return storage_tolerance(t, 1.0); };
  return k;
}

}  // namespace

std::vector<KernelSpec> memory_kernels() { return {copy_spec(), elementwise_spec(), rmsnorm_spec(), softmax_spec()}; }

}  // namespace tl
