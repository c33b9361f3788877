// Host specs of the tensor-core GEMMs gemm.mma (Ampere-style) and gemm.wgmma (Hopper): C = A · B^T, 16-bit.
#include <cmath>

#include "library.hpp"

namespace tl {
namespace {

// Both kernels compute C[M,N] = A[M,K] · B[N,K]^T: A row-major, B column-major (stored N x K, K-major),
// C row-major in the input type, fp32 accumulation.
Schema gemm_tc_problem() {
  return {{ParamSpec::integer("M", 4096, 1, 1 << 20, "rows of A and C"),
           ParamSpec::integer("N", 4096, 1, 1 << 20, "columns of C (rows of the K-major B)"),
           ParamSpec::integer("K", 4096, 1, 1 << 20, "the reduction; the tensor-core GEMMs need a multiple of 8 (16-byte rows)"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of A, B and C")}};
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

Status check_problem(const Values& p) {
  if (p.integer("K") % 8 != 0)
    return refuse("K=" + p.text("K") + " is not a multiple of 8: rows of A and B are copied 16 bytes at a time; pad K");
  return Status::success();
}

Status check_smem(std::int64_t bytes, const DeviceLimits& limits, const std::string& what) {
  if (bytes > limits.smem_per_block_optin)
    return refuse(what + " need " + std::to_string(bytes) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: lower num_stages or the block tile");
  return Status::success();
}

std::vector<ArgSpec> operands(const Values& p) {
  const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  return {ArgSpec::tensor("A", p.dtype(), {M, K}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
          ArgSpec::tensor("B", p.dtype(), {N, K}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2}),
          ArgSpec::tensor("C", p.dtype(), {M, N}, ArgRole::out)};
}

std::vector<ArgSpec> sizes(const Values& p) {
  return {ArgSpec::scalar("M", DType::i32, static_cast<double>(p.integer("M"))),
          ArgSpec::scalar("N", DType::i32, static_cast<double>(p.integer("N"))),
          ArgSpec::scalar("K", DType::i32, static_cast<double>(p.integer("K")))};
}

// The parts both variants share: problem, FLOPs, bytes, reference, tolerance.
KernelSpec gemm_tc_base() {
  KernelSpec k;
  k.family = "gemm";
  k.problem = gemm_tc_problem();
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) * static_cast<double>(p.integer("K"));
  };
  k.min_bytes = [](const Values& p) {
    const double M = static_cast<double>(p.integer("M")), N = static_cast<double>(p.integer("N")),
                 K = static_cast<double>(p.integer("K"));
    return (M * K + N * K + M * N) * static_cast<double>(dtype_size(p.dtype()));
  };
  k.reference = [](const Values&, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
    const std::int64_t K = A.shape.at(1), N = B.shape.at(0);
    std::vector<double> out;
    out.reserve(idx.size());
    for (auto i : idx) {
      const std::int64_t r = i / N, c = i % N;
      double s = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) s += A.at(r * K + kk) * B.at(c * K + kk);
      out.push_back(s);
    }
    return out;
  };
  // The output is rounded to 16 bits (relative 2^-9 for bf16, 2^-12 for f16); entries have magnitude about
  // sqrt(K)/3 for uniform [-1,1) inputs, so the max abs error scales with sqrt(K).
  k.tolerance = [](const Values& p, DType dt) {
    const double K = static_cast<double>(p.integer("K"));
    return dt == DType::bf16 ? Tolerance{1e-2, 0.02 * std::sqrt(K)} : Tolerance{5e-3, 0.004 * std::sqrt(K)};
  };
  k.baseline = [](const Values& p) -> std::optional<BaselineSpec> {
    BaselineSpec b;
    b.layout = "nt";
    b.M = static_cast<int>(p.integer("M"));
    b.N = static_cast<int>(p.integer("N"));
    b.K = static_cast<int>(p.integer("K"));
    b.in = b.out = p.dtype();
    return b;
  };
  return k;
}

std::string bf16_flag(const Values& p) { return p.dtype() == DType::bf16 ? "true" : "false"; }

// [SECTION] gemm.mma

std::int64_t mma_threads(const Values& c) { return c.integer("warps_M") * c.integer("warps_N") * 32; }
std::int64_t mma_smem(const Values& c) {
  return c.integer("num_stages") * (c.integer("block_M") + c.integer("block_N")) * 64 * 2;
}

Status check_mma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  const auto bm = c.integer("block_M"), bn = c.integer("block_N"), wm = c.integer("warps_M"), wn = c.integer("warps_N");
  if (bm % (16 * wm) != 0 || bn % (16 * wn) != 0)
    return refuse("the warp tile (block_M/warps_M) x (block_N/warps_N) = " + std::to_string(bm / wm) + " x " +
                  std::to_string(bn / wn) + " must be a multiple of 16 x 16 (m16n8k16 tiles, ldmatrix.x4 pairs)");
  const auto threads = mma_threads(c);
  if ((bm * 8) % threads != 0 || (bn * 8) % threads != 0)
    return refuse(std::to_string(threads) + " threads cannot split the " + std::to_string(bm) + "- and " +
                  std::to_string(bn) + "-row tiles (8 chunks of 16 bytes per row) evenly: use fewer warps");
  const auto acc = (bm / wm) * (bn / wn) / 32;
  if (acc > 128)
    return refuse("a " + std::to_string(bm / wm) + " x " + std::to_string(bn / wn) + " warp tile is " +
                  std::to_string(acc) + " fp32 accumulators per thread, more than fit in 255 registers: add warps");
  return check_smem(mma_smem(c), limits, std::to_string(c.integer("num_stages")) + " stages of " + std::to_string(bm) +
                                             "x64 + " + std::to_string(bn) + "x64 tiles");
}

KernelSpec gemm_mma_spec() {
  KernelSpec k = gemm_tc_base();
  k.name = "gemm.mma";
  k.summary = "Ampere-style GEMM: cp.async pipeline, ldmatrix from swizzled smem, mma.sync m16n8k16 (C = A*B^T, 16-bit)";
  k.source = "gemm/gemm_mma.cuh";
  k.config = {{ParamSpec::one_of("block_M", 128, {32, 64, 128, 256}, "rows of C per block"),
               ParamSpec::one_of("block_N", 256, {32, 64, 128, 256}, "columns of C per block"),
               ParamSpec::one_of("warps_M", 2, {1, 2, 4, 8}, "warps along M (each owns block_M/warps_M rows)"),
               ParamSpec::one_of("warps_N", 4, {1, 2, 4, 8}, "warps along N"),
               ParamSpec::integer("num_stages", 3, 2, 8, "cp.async pipeline depth (block_K = 64 per stage)"),
               ParamSpec::boolean("swizzle", true, "XOR-swizzle the smem tiles (ldmatrix conflict-free)"),
               ParamSpec::one_of("panel", 16, {1, 2, 4, 8, 16}, "rasterization: tile rows walked together for L2 reuse")}};
  k.can_implement = check_mma;
  // Region ids of the kernel's TL_PROBE marks (gemm_mma.cuh, mma_probe), in order.
  k.probes = {"load_issue", "wait_stage", "mma", "epilogue"};
  // Per warp: the prologue's issues, then per k-step a wait, an issue and the MMAs (begin + end each), the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c) {
    const auto k_steps = (p.integer("K") + 63) / 64;
    return static_cast<std::uint32_t>(6 * k_steps + 2 * c.integer("num_stages") + 2 + 64);
  };
  k.name_expression = [](const Values& p, const Values& c) {
    return "tl::gemm_mma<" + c.text("block_M") + "," + c.text("block_N") + "," + c.text("warps_M") + "," +
           c.text("warps_N") + "," + c.text("num_stages") + "," + c.text("swizzle") + "," + c.text("panel") + "," +
           bf16_flag(p) + ">";
  };
  k.launch = [](const Values& p, const Values& c) {
    LaunchGeometry g;
    const auto tiles = ((p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M")) *
                       ((p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N"));
    g.grid.x = static_cast<std::uint32_t>(tiles);
    g.block.x = static_cast<std::uint32_t>(mma_threads(c));
    g.dynamic_smem = static_cast<std::uint32_t>(mma_smem(c));
    return g;
  };
  k.args = [](const Values& p, const Values&) {
    auto a = operands(p);
    for (auto& s : sizes(p)) a.push_back(std::move(s));
    return a;
  };
  k.layouts = [](const Values&, const Values& c) {
    const std::string bm = c.text("block_M"), bn = c.text("block_N");
    const std::string smem = c.boolean("swizzle") ? "swizzle<3,3,3> o " : "";
    return std::vector<LayoutInfo>{{"smem_A", smem + "(" + bm + ",64):(64,1)"},
                                   {"smem_B", smem + "(" + bn + ",64):(64,1)"},
                                   {"mma_A", "mma.m16n8k16.f16.A"},
                                   {"mma_B", "mma.m16n8k16.f16.B"},
                                   {"mma_C", "mma.m16n8k16.f32.C"},
                                   {"ldmatrix", "ldmatrix.x4"}};
  };
  return k;
}

// [SECTION] gemm.wgmma

std::int64_t wgmma_smem(const Values& c) {
  const auto bm = c.integer("block_M"), bn = c.integer("block_N"), st = c.integer("num_stages");
  return st * (bm + bn) * 64 * 2 + (c.boolean("tma_store") ? bm * bn * 2 : 0) + 1024 + 2 * st * 8;
}

Status check_wgmma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  if (c.boolean("tma_store") && p.integer("N") % 8 != 0)
    return refuse("tma_store=true needs N a multiple of 8 (16-byte rows of C for the tensor map); N=" + p.text("N") +
                  ": set tma_store=false");
  return check_smem(wgmma_smem(c), limits,
                    c.text("num_stages") + " stages of " + c.text("block_M") + "x64 + " + c.text("block_N") +
                        "x64 tiles" + (c.boolean("tma_store") ? " plus the C staging tile" : ""));
}

KernelSpec gemm_wgmma_spec() {
  KernelSpec k = gemm_tc_base();
  k.name = "gemm.wgmma";
  k.summary = "Hopper GEMM: TMA 128B swizzle, mbarrier pipeline, warp-specialized wgmma, persistent (C = A*B^T, 16-bit)";
  k.source = "gemm/gemm_wgmma.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.config = {{ParamSpec::one_of("block_M", 128, {64, 128}, "rows of C per tile: 64 per consumer warpgroup"),
               ParamSpec::one_of("block_N", 256, {128, 256}, "columns of C per tile (the wgmma N)"),
               ParamSpec::integer("num_stages", 3, 2, 8, "TMA pipeline depth (block_K = 64 per stage)"),
               ParamSpec::one_of("panel", 16, {1, 2, 4, 8, 16, 32}, "rasterization: tile rows walked together"),
               ParamSpec::boolean("tma_store", true, "epilogue through smem + TMA stores overlapping the next tile")}};
  k.can_implement = check_wgmma;
  // Region ids of the kernel's TL_PROBE marks (gemm_wgmma.cuh, wgmma_probe), in order.
  k.probes = {"wait_empty", "tma_issue", "wait_full", "wgmma", "release", "epilogue"};
  // Per warp and pipeline iteration: the producer's two regions, or a consumer's two regions and its release (begin +
  // end each), plus an epilogue per tile; iterations = the tiles of the busiest CTA x k-steps.
  k.probe_capacity = [](const Values& p, const Values& c) {
    const auto bm = c.integer("block_M"), bn = c.integer("block_N");
    const auto tiles = ((p.integer("M") + bm - 1) / bm) * ((p.integer("N") + bn - 1) / bn);
    const auto grid = std::min<std::int64_t>(tiles, 132);
    const auto per_block = (tiles + grid - 1) / grid;
    const auto iterations = per_block * ((p.integer("K") + 63) / 64);
    return static_cast<std::uint32_t>(5 * iterations + 2 * per_block + 64);
  };
  k.name_expression = [](const Values& p, const Values& c) {
    return "tl::gemm_wgmma<" + c.text("block_M") + "," + c.text("block_N") + ",64," + c.text("num_stages") + "," +
           std::to_string(c.integer("block_M") / 64) + "," + c.text("panel") + "," + bf16_flag(p) + "," +
           c.text("tma_store") + ">";
  };
  // Persistent: one CTA per SM at most (132 on the H100); the device's SM count is not known here, so the
  // grid is capped at the tile count and at 132.
  k.launch = [](const Values& p, const Values& c) {
    LaunchGeometry g;
    const auto tiles = ((p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M")) *
                       ((p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N"));
    g.grid.x = static_cast<std::uint32_t>(std::min<std::int64_t>(tiles, 132));
    g.block.x = static_cast<std::uint32_t>((c.integer("block_M") / 64 + 1) * 128);
    g.dynamic_smem = static_cast<std::uint32_t>(wgmma_smem(c));
    return g;
  };
  // Kernel signature: (tma_A, tma_B, tma_C, C, M, N, K); A and B are reached only through their tensor maps.
  k.args = [](const Values& p, const Values& c) {
    auto ops = operands(p);
    ops[0].is_param = ops[1].is_param = false;
    std::vector<ArgSpec> a = {ops[0], ops[1],
                              ArgSpec::tensor_map("tma_A", "A", {64, c.integer("block_M")}, 128),
                              ArgSpec::tensor_map("tma_B", "B", {64, c.integer("block_N")}, 128),
                              // Without tma_store the kernel never reads tma_C, and C's rows need not be
                              // 16-byte multiples: pass a valid map of A in its place.
                              c.boolean("tma_store") ? ArgSpec::tensor_map("tma_C", "C", {64, 64}, 128)
                                                     : ArgSpec::tensor_map("tma_C", "A", {64, c.integer("block_M")}, 128),
                              ops[2]};
    for (auto& s : sizes(p)) a.push_back(std::move(s));
    return a;
  };
  k.layouts = [](const Values&, const Values& c) {
    return std::vector<LayoutInfo>{{"smem_A", "smem.swizzle128B.bf16.(" + c.text("block_M") + ",64)"},
                                   {"smem_B", "smem.swizzle128B.bf16.(" + c.text("block_N") + ",64)"},
                                   {"wgmma_C", "wgmma.m64n" + c.text("block_N") + "k16.f32.C"}};
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> gemm_tc_kernels() { return {gemm_mma_spec(), gemm_wgmma_spec()}; }

}  // namespace tl
