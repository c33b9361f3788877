// Host spec of gemm.simt: schema, validity, launch, arguments, float64 reference.
#include <cmath>

#include "gemm/gemm_simt_plan.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

// The kernel's config from the spec's validated values.
GemmSimtConfig simt_config(const Values& p, const Values& c) {
  const DType in = p.dtype();
  return {.block_M = static_cast<int>(c.integer("block_M")),
          .block_N = static_cast<int>(c.integer("block_N")),
          .block_K = static_cast<int>(c.integer("block_K")),
          .thread_M = static_cast<int>(c.integer("thread_M")),
          .thread_N = static_cast<int>(c.integer("thread_N")),
          .dtype = in == DType::f16 ? GemmSimtInput::f16 : in == DType::bf16 ? GemmSimtInput::bf16 : GemmSimtInput::f32};
}

std::int64_t threads_of(const Values& p, const Values& c) { return make_plan(simt_config(p, c)).threads; }
std::size_t smem_bytes(const Values& p, const Values& c) {
  return static_cast<std::size_t>(make_plan(simt_config(p, c)).smem_bytes);
}

Status check(const Values& p, const Values& c, const DeviceLimits& limits) {
  auto refuse = [](std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); };
  for (const char* d : {"M", "N"}) {
    const std::string b = std::string("block_") + d, t = std::string("thread_") + d;
    if (c.integer(b) % c.integer(t) != 0)
      return refuse(b + "=" + c.text(b) + " is not a multiple of " + t + "=" + c.text(t) +
                    ": the block tile must split evenly into thread tiles");
  }
  const auto threads = threads_of(p, c);
  if (threads % 32 != 0)
    return refuse("(block_M/thread_M)*(block_N/thread_N) = " + std::to_string(threads) +
                  " threads is not a multiple of 32 (a warp): make the block tile larger or the thread tile smaller");
  if (threads > limits.max_threads_per_block)
    return refuse(std::to_string(threads) + " threads per block is over the limit of " +
                  std::to_string(limits.max_threads_per_block) + ": make the thread tile larger");
  const auto acc = c.integer("thread_M") * c.integer("thread_N");
  if (acc > 128)
    return refuse("thread_M*thread_N = " + std::to_string(acc) +
                  " accumulators per thread would not fit in 255 registers: use a thread tile of at most 128 elements");
  if (smem_bytes(p, c) > static_cast<std::size_t>(limits.smem_per_block_optin))
    return refuse("block_K*(block_M+block_N)*4 = " + std::to_string(smem_bytes(p, c)) + " bytes of shared memory is over " +
                  limits.arch + "'s " + std::to_string(limits.smem_per_block_optin) +
                  " bytes per block: lower block_K or the block tile");
  if ((p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M") > 65535)
    return refuse("M=" + p.text("M") + " needs more than 65535 block rows (grid.y limit): raise block_M");
  return Status::success();
}

KernelSpec gemm_simt_spec() {
  KernelSpec k;
  k.name = "gemm.simt";
  k.family = "gemm";
  k.summary = "tiled SIMT GEMM C = A*B (A MxK, B KxN row-major; C float), fp32 accumulate";
  k.source = "gemm/gemm_simt.cuh";
  k.problem = {{ParamSpec::integer("M", 2048, 1, 1 << 24, "rows of A and C"),
                ParamSpec::integer("N", 2048, 1, 1 << 24, "columns of B and C"),
                ParamSpec::integer("K", 2048, 1, 1 << 24, "columns of A, rows of B (the reduction)"),
                ParamSpec::enumeration("dtype", "f32", {"f32", "f16", "bf16"}, "type of A and B (C is always f32)")}};
  k.config = {{ParamSpec::one_of("block_M", 128, {16, 32, 64, 128, 256}, "rows of C per block"),
               ParamSpec::one_of("block_N", 128, {16, 32, 64, 128, 256}, "columns of C per block"),
               ParamSpec::one_of("block_K", 8, {4, 8, 16, 32, 64}, "K step: depth of the A and B tiles in shared memory"),
               ParamSpec::one_of("thread_M", 8, {1, 2, 4, 8, 16}, "rows of C per thread"),
               ParamSpec::one_of("thread_N", 8, {1, 2, 4, 8, 16}, "columns of C per thread")}};
  k.can_implement = check;
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(simt_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    g.grid.x = static_cast<unsigned>((p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N"));
    g.grid.y = static_cast<unsigned>((p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M"));
    g.block.x = static_cast<unsigned>(threads_of(p, c));
    g.dynamic_smem = smem_bytes(p, c);
    return g;
  };
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
    return std::vector<ArgSpec>{ArgSpec::tensor("A", p.dtype(), {M, K}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
                                ArgSpec::tensor("B", p.dtype(), {K, N}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2}),
                                ArgSpec::tensor("C", DType::f32, {M, N}, ArgRole::out),
                                ArgSpec::scalar("M", DType::i32, static_cast<double>(M)),
                                ArgSpec::scalar("N", DType::i32, static_cast<double>(N)),
                                ArgSpec::scalar("K", DType::i32, static_cast<double>(K))};
  };
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) * static_cast<double>(p.integer("K"));
  };
  k.min_bytes = [](const Values& p) {
    const double M = static_cast<double>(p.integer("M")), N = static_cast<double>(p.integer("N")),
                 K = static_cast<double>(p.integer("K"));
    return (M * K + K * N) * static_cast<double>(dtype_size(p.dtype())) + M * N * 4.0;
  };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
    const std::int64_t K = A.shape.at(1), N = B.shape.at(1);
    std::vector<double> out;
    out.reserve(idx.size());
    for (auto i : idx) {
      const std::int64_t r = i / N, c = i % N;
      double s = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) s += A.at(r * K + kk) * B.at(kk * N + c);
      out.push_back(s);
    }
    return out;
  };
  // The inputs are exact in float (the reference reads the same rounded values), so only fp32 accumulation
  // error remains: about sqrt(K) roundings of partial sums of magnitude ~sqrt(K)/3.
  k.tolerance = [](const Values& p, DType) {
    const double K = static_cast<double>(p.integer("K"));
    return Tolerance{1e-6 + 2e-6 * std::sqrt(K), 1e-5 * K};
  };
  // The plan's tiles (floats: the kernel converts as it loads). Its thread_C is no hardware atom: not shown.
  k.layouts = [](const Values& p, const Values& c) {
    const GemmSimtPlan plan = make_plan(simt_config(p, c));
    return std::vector<LayoutInfo>{{"smem_A", memory_spec(plan.smem_A, "f32")}, {"smem_B", memory_spec(plan.smem_B, "f32")}};
  };
  k.baseline = [](const Values& p, const Values&) -> std::optional<BaselineSpec> {
    BaselineSpec b;
    b.layout = "nn";
    b.M = static_cast<int>(p.integer("M"));
    b.N = static_cast<int>(p.integer("N"));
    b.K = static_cast<int>(p.integer("K"));
    b.in = p.dtype();
    b.out = DType::f32;
    return b;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> gemm_kernels() { return {gemm_simt_spec()}; }

}  // namespace tl
