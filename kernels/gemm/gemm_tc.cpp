// Host specs of the tensor-core GEMMs gemm.mma (Ampere-style) and gemm.wgmma (Hopper): C = A · op(B), 16-bit inputs;
// gemm.fp8 (Hopper): C = (scale_A A) · (scale_B B)^T, e4m3 inputs; gemm.grouped (Hopper): a MoE layer's G such GEMMs,
// bf16 or e4m3, in one launch.
#include <algorithm>
#include <cmath>
#include <random>

#include "gemm/gemm_fp8_plan.hpp"
#include "gemm/gemm_grouped_plan.hpp"
#include "gemm/gemm_mma_plan.hpp"
#include "gemm/gemm_wgmma_plan.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/trace/model.hpp"
#include "tile/layout_spec.hpp"
#include "tile/work_order.hpp"

namespace tl {
namespace {

// Both kernels compute C[M,N] = A[M,K] · op(B) with A row-major, fp32 accumulation and C row-major in out_dtype.
// trans_B (TileLang's name; cuBLAS's "T" on B in row-major terms): B is stored N x K (K-major), C = A · B^T;
// trans_B=false: B is stored K x N row-major (N-major), C = A · B.
Schema gemm_tc_problem() {
  return {{ParamSpec::integer("M", 4096, 1, 1 << 20, "rows of A and C"),
           ParamSpec::integer("N", 4096, 1, 1 << 20, "columns of C (and of B: rows of B when trans_B)"),
           ParamSpec::integer("K", 4096, 1, 1 << 20, "the reduction; the tensor-core GEMMs need a multiple of 8 (16-byte rows)"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "f16"}, "type of A and B"),
           ParamSpec::boolean("trans_B", true,
                              "B stored N x K (K-major, C = A*B^T, the NT GEMM); false: K x N row-major (N-major, C = A*B)"),
           ParamSpec::enumeration("out_dtype", "same", {"same", "bf16", "f16", "f32"},
                                  "type of C (same: dtype); accumulation is fp32 always")}};
}

// The element type of C.
DType out_type(const Values& p) {
  const std::string o = p.text("out_dtype");
  return o == "same" ? p.dtype() : o == "f32" ? DType::f32 : o == "f16" ? DType::f16 : DType::bf16;
}

// The kernels' out_dtype (gemm_types.hpp).
gemm_detail::OutType out_code(const Values& p) {
  const DType t = out_type(p);
  return t == DType::f32 ? gemm_detail::kOutF32 : t == DType::f16 ? gemm_detail::kOutF16 : gemm_detail::kOutBf16;
}

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

Status check_problem(const Values& p) {
  if (p.integer("K") % 8 != 0)
    return refuse("K=" + p.text("K") + " is not a multiple of 8: rows of A and B are copied 16 bytes at a time; pad K");
  if (!p.boolean("trans_B") && p.integer("N") % 8 != 0)
    return refuse("trans_B=false needs N a multiple of 8 (the K x N rows of B are copied 16 bytes at a time); N=" +
                  p.text("N") + ": pad N, or store B as N x K (trans_B=true)");
  return Status::success();
}

Status check_smem(std::int64_t bytes, const DeviceLimits& limits, const std::string& what, const std::string& fix) {
  if (bytes > limits.smem_per_block_optin)
    return refuse(what + " need " + std::to_string(bytes) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: " + fix);
  return Status::success();
}

std::vector<ArgSpec> operands(const Values& p) {
  const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  const std::vector<std::int64_t> b_shape = p.boolean("trans_B") ? std::vector<std::int64_t>{N, K}
                                                                 : std::vector<std::int64_t>{K, N};
  return {ArgSpec::tensor("A", p.dtype(), {M, K}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
          ArgSpec::tensor("B", p.dtype(), b_shape, ArgRole::in, {.lo = -1, .hi = 1, .seed = 2}),
          ArgSpec::tensor("C", out_type(p), {M, N}, ArgRole::out)};
}

std::vector<ArgSpec> sizes(const Values& p) {
  return {ArgSpec::scalar("M", DType::i32, static_cast<double>(p.integer("M"))),
          ArgSpec::scalar("N", DType::i32, static_cast<double>(p.integer("N"))),
          ArgSpec::scalar("K", DType::i32, static_cast<double>(p.integer("K")))};
}

// Problems of `tilelab test` (the runner adds each dtype): sizes that are not tile multiples in M, N and K, each
// B layout and each output type. N is a multiple of 8 where trans_B=false needs it (136, 520: still not a
// multiple of any block_N).
std::vector<std::map<std::string, std::string>> gemm_tc_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  auto mnk = [](const char* m, const char* n, const char* k, KV extra = {}) {
    KV kv = {{"M", m}, {"N", n}, {"K", k}};
    kv.insert(extra.begin(), extra.end());
    return kv;
  };
  const KV row = {{"trans_B", "false"}}, f32 = {{"out_dtype", "f32"}}, row_f32 = {{"trans_B", "false"}, {"out_dtype", "f32"}};
  std::vector<KV> s = {mnk("257", "130", "72"), mnk("256", "128", "64"), mnk("257", "136", "72", row),
                       mnk("257", "130", "72", f32), mnk("256", "136", "200", row_f32)};
  if (full) {
    s.insert(s.end(), {mnk("257", "130", "67"), mnk("1", "1", "8"), mnk("513", "511", "1000"),
                       mnk("1", "8", "8", row), mnk("513", "520", "1000", row), mnk("513", "511", "1000", f32),
                       mnk("513", "520", "1000", row_f32), mnk("200", "136", "72", {{"out_dtype", "f16"}}),
                       mnk("200", "136", "72", {{"out_dtype", "bf16"}, {"trans_B", "false"}}),
                       // More tiles (and tile pairs) than a persistent grid has CTAs: each CTA walks several, and
                       // both dimensions end in partial tiles (17 x 10 tiles of 128 x 256).
                       mnk("2113", "2312", "136")});
  }
  return s;
}

// The parts both variants share: problem, FLOPs, bytes, reference, tolerance.
KernelSpec gemm_tc_base() {
  KernelSpec k;
  k.family = "gemm";
  k.tensor_cores = true;
  k.problem = gemm_tc_problem();
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) * static_cast<double>(p.integer("K"));
  };
  k.min_bytes = [](const Values& p) {
    const double M = static_cast<double>(p.integer("M")), N = static_cast<double>(p.integer("N")),
                 K = static_cast<double>(p.integer("K"));
    return (M * K + N * K) * static_cast<double>(dtype_size(p.dtype())) +
           M * N * static_cast<double>(dtype_size(out_type(p)));
  };
  // float64 dot products over the inputs as stored: B(c, kk) is B[c*K + kk] (N x K) or B[kk*N + c] (K x N).
  k.reference = [](const Values& p, const ReferenceInputs& in, const std::string&, const std::vector<std::int64_t>& idx)
      -> Result<std::vector<double>> {
    const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
    const std::int64_t K = A.shape.at(1), N = p.integer("N");
    const bool trans_b = p.boolean("trans_B");
    const std::int64_t b_row = trans_b ? K : 1, b_k = trans_b ? 1 : N;  // element strides of B(c, kk)
    std::vector<double> out;
    out.reserve(idx.size());
    for (auto i : idx) {
      const std::int64_t r = i / N, c = i % N;
      double s = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) s += A.at(r * K + kk) * B.at(c * b_row + kk * b_k);
      out.push_back(s);
    }
    return out;
  };
  // A 16-bit output is rounded to 16 bits (relative 2^-9 for bf16, 2^-12 for f16); entries have magnitude about
  // sqrt(K)/3 for uniform [-1,1) inputs, so the max abs error scales with sqrt(K). An f32 output carries only the
  // fp32 accumulation error (products of 16-bit inputs are exact in fp32; the tensor cores' additions are not
  // IEEE-rounded): 20x tighter than a 16-bit output, still far above what it needs.
  k.tolerance = [](const Values& p, DType) {
    const double K = static_cast<double>(p.integer("K"));
    switch (out_type(p)) {
      case DType::f32: return Tolerance{5e-4, 5e-4 * std::sqrt(K)};
      case DType::bf16: return Tolerance{1e-2, 0.02 * std::sqrt(K)};
      default: return Tolerance{5e-3, 0.004 * std::sqrt(K)};
    }
  };
  // cuBLAS on the same buffers: "nt" (B N x K) or "nn" (B K x N), output in out_dtype, fp32 compute.
  k.baseline = [](const Values& p, const Values&) -> std::optional<BaselineSpec> {
    BaselineSpec b;
    b.layout = p.boolean("trans_B") ? "nt" : "nn";
    b.M = static_cast<int>(p.integer("M"));
    b.N = static_cast<int>(p.integer("N"));
    b.K = static_cast<int>(p.integer("K"));
    b.in = p.dtype();
    b.out = out_type(p);
    return b;
  };
  k.test_problems = gemm_tc_test_problems;
  return k;
}

// [SECTION] model timelines (KernelSpec::model_timeline): each kernel's pipeline, from its config

// What both GEMM models start from: the device's per-SM rates and the 64-deep k-steps of the problem.
struct GemmModelInputs {
  GemmModelCosts costs;
  double load_bw = 0, store_bw = 0;  // bytes per ns per SM: tile loads (mostly L2 hits), output stores (HBM)
  double elem = 0;                   // bytes per element
  std::int64_t M = 0, N = 0;
  int k_steps = 0, sms = 1;
};

GemmModelInputs gemm_model_inputs(const KernelInstance& inst, const ModelDevice& d) {
  GemmModelInputs g;
  const double clock_ns = d.clock_hz * 1e-9;
  g.sms = std::max(d.num_sms, 1);
  g.costs.issue_ns = d.issue_cycles / clock_ns;
  g.costs.barrier_ns = d.barrier_cycles / clock_ns;
  g.costs.latency_ns = d.load_latency_ns;
  g.load_bw = d.l2_bytes_per_s / g.sms * 1e-9;
  g.store_bw = d.hbm_bytes_per_s / g.sms * 1e-9;
  g.M = inst.problem.integer("M");
  g.N = inst.problem.integer("N");
  g.elem = static_cast<double>(dtype_size(inst.problem.dtype()));
  g.k_steps = static_cast<int>((inst.problem.integer("K") + 63) / 64);
  return g;
}

Status check_events(const KernelInstance& inst, double events) {
  return check_model_events(events, inst.spec->name, inst.problem.to_string());
}

Timeline finish_model(Timeline t, const KernelInstance& inst, const ModelDevice& d, const std::string& shape) {
  t.kernel = inst.spec->name;
  t.label = inst.problem.to_string() + "  " + inst.config.to_string();
  t.model_note = d.source + "; " + shape;
  return t;
}

GemmWgmmaConfig wgmma_config(const Values& p, const Values& c);

Result<Timeline> model_wgmma(const KernelInstance& inst, const ModelDevice& d) {
  GemmModelInputs g = gemm_model_inputs(inst, d);
  GemmModelCosts& c = g.costs;
  const GemmWgmmaConfig cfg = wgmma_config(inst.problem, inst.config);
  const std::int64_t bm = cfg.block_M, bn = cfg.block_N;
  GemmWgmmaModel m;
  m.stages = cfg.num_stages;
  const int chains = cfg.chains();
  const double wn = cfg.wgmma_n();  // a consumer's columns (half of a 192 x 192 tile's)
  m.consumers = cfg.pingpong ? 1 : cfg.consumers();  // pingpong: the tensor cores walk every tile once, in turns
  m.k_steps = g.k_steps;
  const std::int64_t tiles = ((g.M + bm - 1) / bm) * ((g.N + bn - 1) / bn);
  // Per k-step: the producer's wait, issue and flight, and each consumer's wait, wgmma and release; an epilogue
  // per tile and consumer.
  TL_RETURN_IF_ERROR(check_events(inst, double(tiles) * m.consumers * (double(g.k_steps) * (3.0 / m.consumers + 3) + 1)));
  const std::int64_t grid = std::max<std::int64_t>(inst.launch.grid.x, 1);
  m.tiles_per_block.clear();
  for (std::int64_t blk = 0; blk < grid; ++blk)
    m.tiles_per_block.push_back(static_cast<int>((tiles - blk + grid - 1) / grid));
  // In a 2-CTA cluster the operand the pair shares (B for cluster_M=2, A for cluster_N=2) is read from L2 half by
  // each CTA and multicast to both: each CTA pulls half of it.
  const auto cm = inst.config.integer("cluster_M"), cn = inst.config.integer("cluster_N");
  c.transfer_ns = (static_cast<double>(bm) / cn + static_cast<double>(bn) / cm) * 64 * g.elem / g.load_bw;
  c.mma_ns = 2.0 * 64 * chains * wn * 64 / (d.wgmma_flops / g.sms * 1e-9);
  // With the TMA-store epilogue the consumer only stages its tile in shared memory; the TMA store drains it during
  // the next tile. Without, its threads store to global memory at the SM's share of HBM. It is on when the
  // kernel's tma_C map covers C (tma_store=auto decides by the output type; A is mapped there otherwise).
  const bool tma_store = std::any_of(inst.args.begin(), inst.args.end(), [](const ArgSpec& a) {
    return a.kind == ArgSpec::Kind::tensor_map && a.name == "tma_C" && a.tensor_of == "C";
  });
  c.epilogue_ns =
      chains * (d.epilogue_fixed_ns + 64.0 * wn * g.elem / (tma_store ? g.load_bw : g.store_bw));
  std::string shape = "one warp per warpgroup shown (the others run the same schedule)";
  if (wgmma_config(inst.problem, inst.config).stream_k) shape += "; whole tiles: stream-K's split not modelled";
  if (cfg.pingpong) shape += "; pingpong: modelled as one consumer walking every tile (the turns not modelled)";
  if (cm * cn > 1)
    shape += "; 2-CTA cluster: the shared operand's L2 reads halved, the pair's waits on each other not modelled";
  return finish_model(model_gemm_wgmma(m, c, inst.spec->probes), inst, d, shape);
}

Result<Timeline> model_mma(const KernelInstance& inst, const ModelDevice& d) {
  GemmModelInputs g = gemm_model_inputs(inst, d);
  GemmModelCosts& c = g.costs;
  const auto bm = inst.config.integer("block_M"), bn = inst.config.integer("block_N");
  GemmMmaModel m;
  m.stages = static_cast<int>(inst.config.integer("num_stages"));
  m.warps = static_cast<int>(inst.config.integer("warps_M") * inst.config.integer("warps_N"));
  m.k_steps = g.k_steps;
  TL_RETURN_IF_ERROR(check_events(inst, double(inst.launch.grid.volume()) * (3.0 * g.k_steps + 1)));  // issue, wait, mma; epilogue
  m.blocks = static_cast<int>(inst.launch.grid.volume());
  m.num_sms = g.sms;
  const double smem = std::max<double>(inst.launch.dynamic_smem, 1);
  m.blocks_per_sm = std::max(1, std::min(static_cast<int>(233472 / smem), 2048 / std::max(m.warps * 32, 1)));
  // Co-resident blocks share the SM's bandwidth and tensor cores.
  c.transfer_ns = static_cast<double>(bm + bn) * 64 * g.elem / g.load_bw * m.blocks_per_sm;
  c.mma_ns = 2.0 * static_cast<double>(bm * bn) * 64 / (d.mma_sync_flops / g.sms * 1e-9) * m.blocks_per_sm;
  c.epilogue_ns = d.epilogue_fixed_ns + static_cast<double>(bm * bn) * g.elem / g.store_bw * m.blocks_per_sm;
  const std::string shape = "warp 0 of each block shown (all warps run the same schedule); " +
                            std::to_string(m.blocks_per_sm) + " blocks per SM";
  return finish_model(model_gemm_mma(m, c, inst.spec->probes), inst, d, shape);
}

// [SECTION] gemm.mma

// The kernel's config from the spec's validated values.
GemmMmaConfig mma_config(const Values& p, const Values& c) {
  return {.block_M = static_cast<int>(c.integer("block_M")),
          .block_N = static_cast<int>(c.integer("block_N")),
          .warps_M = static_cast<int>(c.integer("warps_M")),
          .warps_N = static_cast<int>(c.integer("warps_N")),
          .num_stages = static_cast<int>(c.integer("num_stages")),
          .swizzle = c.boolean("swizzle"),
          .panel = static_cast<int>(c.integer("panel")),
          .min_blocks = static_cast<int>(c.integer("min_blocks")),
          .unroll_k = c.boolean("unroll_k"),
          .early_sync = c.boolean("early_sync"),
          .serpentine = c.boolean("serpentine"),
          .frag_buffers = static_cast<int>(c.integer("frag_buffers")),
          .bf16 = p.dtype() == DType::bf16,
          .trans_B = p.boolean("trans_B"),
          .out_dtype = out_code(p)};
}

std::int64_t mma_threads(const Values& p, const Values& c) { return make_plan(mma_config(p, c)).threads; }
std::int64_t mma_smem(const Values& p, const Values& c) { return make_plan(mma_config(p, c)).smem_bytes; }

Status check_mma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  const auto bm = c.integer("block_M"), bn = c.integer("block_N"), wm = c.integer("warps_M"), wn = c.integer("warps_N");
  if (bm % (16 * wm) != 0 || bn % (16 * wn) != 0)
    return refuse("the warp tile (block_M/warps_M) x (block_N/warps_N) = " + std::to_string(bm / wm) + " x " +
                  std::to_string(bn / wn) + " must be a multiple of 16 x 16 (m16n8k16 tiles, ldmatrix.x4 pairs)");
  if (!p.boolean("trans_B") && bn < 64)
    return refuse("trans_B=false stores B in smem as 64-column blocks (128-byte swizzled rows): block_N=" +
                  c.text("block_N") + " is narrower; use block_N >= 64");
  const auto threads = mma_threads(p, c);
  if ((bm * 8) % threads != 0 || (bn * 8) % threads != 0)
    return refuse(std::to_string(threads) + " threads cannot split the " + std::to_string(bm) + "- and " +
                  std::to_string(bn) + "-row tiles (8 chunks of 16 bytes per row) evenly: use fewer warps");
  const auto acc = (bm / wm) * (bn / wn) / 32;
  if (acc > 128)
    return refuse("a " + std::to_string(bm / wm) + " x " + std::to_string(bn / wn) + " warp tile is " +
                  std::to_string(acc) + " fp32 accumulators per thread, more than fit in 255 registers: add warps");
  const auto blocks = c.integer("min_blocks");
  if (blocks > 1) {
    // Registers: the accumulators plus the buffers of A and B fragments and ~32 addresses and pointers must fit
    // the cap (128 x 128, warps 2 x 4: 64 + 24 + 32 = 120 of 128 with one buffer; two buffers spill 172 bytes).
    const auto cap = std::min<std::int64_t>(255, limits.regs_per_block / (threads * blocks) / 8 * 8);
    const auto need = acc + c.integer("frag_buffers") * ((bm / wm) / 16 * 4 + (bn / wn) / 8 * 2) + 32;
    if (need > cap)
      return refuse("min_blocks=" + c.text("min_blocks") + " caps registers at " + std::to_string(cap) +
                    " per thread, but the " + std::to_string(bm / wm) + " x " + std::to_string(bn / wn) +
                    " warp tile needs about " + std::to_string(need) + " (accumulators + fragments): it would spill; "
                    "use min_blocks=1 or a smaller warp tile");
    // Blocks on one SM share its shared memory (the per-block opt-in limit plus the 1 KiB reserved per block).
    if ((mma_smem(p, c) + 1024) * blocks > limits.smem_per_block_optin + 1024)
      return refuse("min_blocks=" + c.text("min_blocks") + ": " + c.text("min_blocks") + " blocks of " +
                    std::to_string(mma_smem(p, c)) + " bytes of shared memory do not fit one SM of " + limits.arch +
                    ": lower num_stages or the block tile");
  }
  return check_smem(mma_smem(p, c), limits,
                    std::to_string(c.integer("num_stages")) + " stages of " + std::to_string(bm) + "x64 + " +
                        std::to_string(bn) + "x64 tiles",
                    "lower num_stages or the block tile");
}

KernelSpec gemm_mma_spec() {
  KernelSpec k = gemm_tc_base();
  k.name = "gemm.mma";
  k.summary = "Ampere-style GEMM: cp.async pipeline, ldmatrix from swizzled smem, mma.sync m16n8k16 (C = A*op(B), 16-bit in)";
  k.source = "gemm/gemm_mma.cuh";
  k.model_timeline = model_mma;
  k.config = {{ParamSpec::one_of("block_M", 128, {32, 64, 128, 256}, "rows of C per block"),
               ParamSpec::one_of("block_N", 256, {32, 64, 128, 256}, "columns of C per block"),
               ParamSpec::one_of("warps_M", 2, {1, 2, 4, 8}, "warps along M (each owns block_M/warps_M rows)"),
               ParamSpec::one_of("warps_N", 4, {1, 2, 4, 8}, "warps along N"),
               ParamSpec::integer("num_stages", 3, 2, 8, "cp.async pipeline depth (block_K = 64 per stage)"),
               ParamSpec::boolean("swizzle", true, "XOR-swizzle the smem tiles (ldmatrix conflict-free)"),
               ParamSpec::one_of("panel", 16, {1, 2, 4, 8, 16}, "rasterization: tile rows walked together for L2 reuse"),
               ParamSpec::one_of("min_blocks", 1, {1, 2}, "blocks per SM the registers are capped for (__launch_bounds__)"),
               // The three switches below are on by default: together +5.8% at 8192^3 on the H100 (383 -> 405 TFLOP/s,
               // docs/perf.md 2026-11-24); unroll_k or early_sync alone lose 4-5%.
               ParamSpec::boolean("unroll_k", true, "unroll the k loop by num_stages (stage addresses become immediates)"),
               ParamSpec::boolean("early_sync", true,
                                  "stage barrier + next stage's first ldmatrix before the last k16 step's MMAs, not after"),
               ParamSpec::boolean("serpentine", true, "reverse the n8 order on odd m16 rows (B fragment reuse at the turns)"),
               ParamSpec::one_of("frag_buffers", 2, {1, 2},
                                 "warp fragment buffers: 2 = ldmatrix one k16 step ahead, 1 = fewer registers")}};
  k.can_implement = check_mma;
  k.probes = gemm_mma_probe_names();
  // Per warp: the prologue's issues, then per k-step a wait, an issue and the MMAs (begin + end each), the epilogue.
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits&) {
    const auto k_steps = (p.integer("K") + 63) / 64;
    return static_cast<std::uint32_t>(6 * k_steps + 2 * c.integer("num_stages") + 2 + 64);
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(mma_config(p, c)); };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    const auto tiles = ((p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M")) *
                       ((p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N"));
    g.grid.x = static_cast<std::uint32_t>(tiles);
    g.block.x = static_cast<std::uint32_t>(mma_threads(p, c));
    g.dynamic_smem = static_cast<std::uint32_t>(mma_smem(p, c));
    return g;
  };
  k.args = [](const Values& p, const Values&, const DeviceLimits&) {
    auto a = operands(p);
    for (auto& s : sizes(p)) a.push_back(std::move(s));
    return a;
  };
  // The plan's tiles and fragments. smem_B is indexed (n, k) either way. A K-major B's ldmatrix.x4 reads its n-rows
  // in the order of the mma's B registers (n8 tile, k half), not as the ldmatrix.x4 atom places its matrices: it is
  // mma_B twice, and ldmatrix_B is shown only for an N-major B, where it is the ldmatrix.x4.trans atom.
  k.layouts = [](const Values& p, const Values& c) {
    const GemmMmaPlan plan = make_plan(mma_config(p, c));
    const std::string in = dtype_name(p.dtype());
    std::vector<LayoutInfo> l = {{"smem_A", memory_spec(plan.smem_A, in)}, {"smem_B", memory_spec(plan.smem_B, in)}};
    auto fragment = [&](const char* name, const Fragment& f, const std::string& atom) {
      if (auto spec = fragment_spec(f, atom)) l.push_back({name, *spec});
    };
    fragment("mma_A", plan.mma_A, "mma.m16n8k16." + in + ".A");
    fragment("mma_B", plan.mma_B, "mma.m16n8k16." + in + ".B");
    fragment("mma_C", plan.mma_C, "mma.m16n8k16.f32.C");
    fragment("ldmatrix_A", plan.ldmatrix_A, "ldmatrix.x4");
    fragment("ldmatrix_B", plan.ldmatrix_B, "ldmatrix.x4.trans");
    return l;
  };
  return k;
}

// [SECTION] gemm.wgmma

// The TMA-store epilogue of the Hopper GEMMs (gemm.wgmma, gemm.fp8): `auto` takes it where it is the fast path and
// fits — a 16-bit C whose rows are whole 16-byte units (the tensor map's rule); an f32 C stores directly from
// registers (its staging tile would not fit beside 3 stages at 128 x 256, and direct stores measured as fast on the
// H100 for gemm.wgmma). gemm.fp8 at 8192^3: +12% with it (3 stages) against 4 stages of direct stores.
bool tma_store_on(const Values& p, const Values& c) {
  const std::string v = c.text("tma_store");
  if (v != "auto") return v == "true";
  const auto c_bytes = static_cast<std::int64_t>(dtype_size(out_type(p)));
  return c_bytes == 2 && (p.integer("N") * c_bytes) % 16 == 0;
}

// A TMA-store epilogue needs rows of C in whole 16-byte units (the tensor map's rule).
Status check_tma_store(const Values& p, const Values& c) {
  const auto c_bytes = static_cast<std::int64_t>(dtype_size(out_type(p)));
  if (tma_store_on(p, c) && (p.integer("N") * c_bytes) % 16 != 0)
    return refuse("tma_store=true needs 16-byte rows of C for the tensor map (N a multiple of " +
                  std::to_string(16 / c_bytes) + " for " + dtype_name(out_type(p)) + "); N=" + p.text("N") +
                  ": set tma_store=false");
  return Status::success();
}

// The persistent Hopper GEMMs' schedule parameters (gemm.wgmma, gemm.fp8): tile order and epilogue.
std::vector<ParamSpec> hopper_schedule_params() {
  return {ParamSpec::one_of("panel", 16, {1, 2, 4, 8, 16, 32}, "rasterization: tile rows (columns) walked together"),
          ParamSpec::enumeration("raster", "m", {"m", "n"},
                                 "raster order: m = panels of tile rows walked column by column (CTAs share A "
                                 "rows in L2); n = panels of tile columns walked row by row (they share B)"),
          ParamSpec::enumeration("tma_store", "auto", {"auto", "true", "false"},
                                 "epilogue through smem + TMA stores overlapping the next tile (auto: for a 16-bit C "
                                 "with 16-byte rows; an f32 C stores from registers)")};
}

// Cluster shape (cluster_M x cluster_N CTAs) and the number of tiles (clusters of tiles) of the persistent grid.
std::int64_t wgmma_cluster(const Values& c) { return c.integer("cluster_M") * c.integer("cluster_N"); }

// The tile gemm.wgmma runs: the config's, or for block_M=0 (auto) 128 rows, or cuBLAS's 256 x 152 with 4 stages and
// c_split=2 where its waves fill the SMs better. Waves in units of a 128 x 256 tile's work: the whole waves of
// tiles over the SMs times the tile's area. On the H100 (docs/perf.md, 2026-11-27, gemmbf3) 256 x 152 ran at the
// default tile's rate per unit of area at K 4096-8192 (0.99-1.01x at 3000 x 5000 x 4096, 4096^3, 2048 x 8192 x 8192;
// 0.96-0.99x at 6144^3, 8192^3, 16384^2 x 4096) and 0.92-0.93x at K 512-1024, so it is taken where its waves are
// under 0.95 of the default's at K >= 2048: of issue 21's eight shapes only 3000 x 5000 x 4096 (3.56 against 4 waves,
// 0.988-0.996x cuBLAS against 0.887x). It needs what the 256 x 152 tile needs (trans_B, no clusters, data-parallel: not
// where stream-K pays for the default tile) and the staged store (c_split); block_N, num_stages and c_split left at
// their defaults.
struct WgmmaTile {
  int block_M, block_N, num_stages, c_split;
};
// The auto 128 x 256 tile takes a fourth 48 KB stage (c_split=2: C staged in two 128-column parts through one part's
// buffer, so that it fits) where that measured faster on the H100 (docs/perf.md, 2026-11-27, gemmbf4; cuBLAS's
// kernels at 4096^3 and 6144^3 run 4 stages of 64 k), on the data-parallel schedule: short tiles of 4-8 k-steps
// (K 193-512; 4096 x 4096 x 512: 1.00-1.02x by medians, 1.003-1.029x by minima in four rounds of two calls; the
// fourth stage holds half of the next tile's k-steps while the consumers store C) and long tiles of 128+ k-steps
// (K >= 8192; 2048 x 8192 x 8192: 1.009-1.010x in both rounds). Not between (K 1024-6144: 0.98-1.03x, mixed between
// rounds) nor with stream-K (8192^3: 0.994-1.001x).
bool wgmma_deep_pays(std::int64_t k_steps, bool stream_k) {
  return !stream_k && ((k_steps >= 4 && k_steps <= 8) || k_steps >= 128);
}
// schedule=pingpong (GemmWgmmaConfig::pingpong): each consumer a whole tile of its own, so a tile is what one
// consumer's registers hold: block_M=0 (auto) is 128 x 128 (two m64n128 chains; 64 x 256 is one m64n256 chain, by
// block_M=64), and the default depth (num_stages 3) becomes the deepest ring that fits beside the two consumers' staging
// tiles (128 x 128 with a 16-bit C: 6 stages of 32 KB; 64 x 256: 4 of 40 KB).
WgmmaTile wgmma_pingpong_tile(const Values& p, const Values& c, WgmmaTile t) {
  if (t.block_M == 0) {
    t.block_M = 128;
    if (t.block_N == 256) t.block_N = 128;
  }
  if (t.num_stages != 3) return t;
  const int optin = limits_for_arch("sm_90a").smem_per_block_optin;
  for (int stages = 8; stages > 3; --stages) {
    const GemmWgmmaConfig cfg{.block_M = t.block_M, .block_N = t.block_N, .num_stages = stages,
                              .tma_store = tma_store_on(p, c), .trans_B = p.boolean("trans_B"),
                              .out_dtype = static_cast<gemm_detail::OutType>(out_code(p)), .c_split = t.c_split,
                              .pingpong = true};
    if (make_plan(cfg).bytes <= optin) return {t.block_M, t.block_N, stages, t.c_split};
  }
  return t;
}
// schedule=auto takes pingpong for the auto tile (block_M=0, block_N, num_stages and c_split at their defaults, no
// cluster, a 16-bit C through the TMA store, a K-major B) at 4-16 k-steps a tile (K 193-1024) where the 128 x 128 tiles
// give each consumer at least two (4 x SMs tiles) and stream-K would not split the default tile. On the H100
// (docs/perf.md, 2026-11-27, gemmbf7; four alternated passes beside cuBLAS in one call) the ping-pong ran 1.089-1.105x
// the default at 4096 x 4096 x 512 and 1.047-1.052x at 8192 x 8192 x 1024 (medians and minima, every pass): there the
// consumers' epilogue is 10-20% of a cooperative tile's time, and the other consumer's wgmma hide it; at K >= 4096 it
// lost 5-25% (0.94x at 4096^3, 0.77-0.78x at 8192^3, 6144^3, 2048 x 8192 x 8192, 16384^2 x 4096), where the main loop's
// shared-memory bytes (160 a tensor clock against the cooperative 128 x 256's 128) set the rate.
bool wgmma_pingpong_pays(const Values& p, const Values& c) {
  if (c.text("schedule") != "auto" || c.integer("block_M") != 0 || c.integer("block_N") != 256 ||
      c.integer("num_stages") != 3 || c.integer("c_split") != 1 || wgmma_cluster(c) != 1 || !tma_store_on(p, c) ||
      dtype_size(out_type(p)) != 2 || !p.boolean("trans_B"))
    return false;
  const int sms = limits_for_arch("sm_90a").sm_count;
  const std::int64_t M = p.integer("M"), N = p.integer("N"), k_steps = (p.integer("K") + 63) / 64;
  if (k_steps < 4 || k_steps > 16 || ((M + 127) / 128) * ((N + 127) / 128) < 4 * sms) return false;
  const std::int64_t t_default = ((M + 127) / 128) * ((N + 255) / 256);
  return t_default >= (1 << 30) || !gemm_stream_k_pays(static_cast<int>(t_default), static_cast<int>(k_steps), sms);
}
// GemmWgmmaConfig::pingpong: schedule=pingpong, or auto where wgmma_pingpong_pays.
bool wgmma_pingpong(const Values& p, const Values& c) {
  return c.text("schedule") == "pingpong" || wgmma_pingpong_pays(p, c);
}
WgmmaTile wgmma_tile(const Values& p, const Values& c) {
  auto i = [&](const char* name) { return static_cast<int>(c.integer(name)); };
  WgmmaTile given{i("block_M"), i("block_N"), i("num_stages"), i("c_split")};
  if (wgmma_pingpong(p, c)) return wgmma_pingpong_tile(p, c, given);
  if (given.block_M != 0) return given;
  given.block_M = 128;
  if (given.block_N != 256 || given.num_stages != 3 || given.c_split != 1 || wgmma_cluster(c) != 1 ||
      !tma_store_on(p, c))
    return given;
  // The auto tile from here on: 128 x 256, with a fourth stage where wgmma_deep_pays says so, or 256 x 152.
  const int sms = limits_for_arch("sm_90a").sm_count;
  const std::int64_t M = p.integer("M"), N = p.integer("N"), k_steps = (p.integer("K") + 63) / 64;
  auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ((M + bm - 1) / bm) * ((N + bn - 1) / bn); };
  auto waves = [&](std::int64_t bm, std::int64_t bn) {
    return static_cast<double>((tiles(bm, bn) + sms - 1) / sms) * static_cast<double>(bm * bn) / (128.0 * 256.0);
  };
  const std::int64_t t_default = tiles(128, 256);
  // As wgmma_stream_k decides for this tile.
  const bool split = c.text("schedule") == "stream_k" ||
                     (c.text("schedule") == "auto" && t_default < (1 << 30) &&
                      gemm_stream_k_pays(static_cast<int>(t_default), static_cast<int>(k_steps), sms));
  // (A 16-bit C: an f32 C's two 128-column parts would not fit beside 4 stages.)
  const WgmmaTile wide =
      dtype_size(out_type(p)) == 2 && wgmma_deep_pays(k_steps, split) ? WgmmaTile{128, 256, 4, 2} : given;
  if (split || !p.boolean("trans_B") || p.integer("K") < 2048) return wide;
  if (waves(256, 152) < 0.95 * waves(128, 256)) return {256, 152, 4, 2};
  return wide;
}

std::int64_t wgmma_cluster_tiles(const Values& p, const Values& c) {
  const WgmmaTile t = wgmma_tile(p, c);
  const auto tiles_m = (p.integer("M") + t.block_M - 1) / t.block_M;
  const auto tiles_n = (p.integer("N") + t.block_N - 1) / t.block_N;
  const auto cm = c.integer("cluster_M"), cn = c.integer("cluster_N");
  return ((tiles_m + cm - 1) / cm) * ((tiles_n + cn - 1) / cn);
}

// The persistent schedule (GemmWgmmaConfig::stream_k): stream_k, or auto where tile/work_order.hpp's
// gemm_stream_k_pays says the split of the last waves saves over 1% beyond its measured cost (8192^3 of the issue-21
// shapes; no clusters). The kernel entry is picked for the arch's SM count, and the kernel decides the split again
// from the grid it gets.
bool wgmma_stream_k(const Values& p, const Values& c) {
  const std::string s = c.text("schedule");
  if (s != "auto") return s == "stream_k";
  if (wgmma_pingpong_pays(p, c)) return false;
  const auto tiles = wgmma_cluster_tiles(p, c), k_steps = (p.integer("K") + 63) / 64;
  return wgmma_cluster(c) == 1 && wgmma_tile(p, c).block_M <= 128 && tiles < (1 << 30) &&
         gemm_stream_k_pays(static_cast<int>(tiles), static_cast<int>(k_steps), limits_for_arch("sm_90a").sm_count);
}

// panel=0 (auto): 4 where the operand a panel's tiles walk across (B for raster m: a panel's few tile rows meet every
// tile column; A for raster n) fits in two thirds of the H100's L2 (50 MiB: the arch table's), so that a wave's ~8 tile rows reuse all of
// it from L2 while the other operand streams through once; else 16, the sweeps' best (16 tile rows x 8 columns a wave
// read the fewest bytes per wave). On the H100 (docs/perf.md, 2026-11-26, two calls, alternated) panel 4 ran 1.0-1.4%
// faster than 16 at 8192 x 8192 x 1024, 8192 x 4096 x 4096 and 16384 x 4096 x 2048, 0.4-2% at 4096^3, even at
// 4096 x 4096 x 512 and 3000 x 5000 x 4096 (B 39 MiB), 2.4% slower at 6144^3 (B 72 MiB).
// Where schedule=auto takes the ping-pong (wgmma_pingpong_pays: 128 x 128 tiles, K 193-1024) and that operand is 8192
// rows or more (64+ tile columns for raster m), 2 instead of 4: on an H200 (docs/perf.md, 2026-11-28, bf16h200; four
// alternated passes beside cuBLAS in one call) panel 2 ran 1.002-1.006x panel 4 by medians and 1.002-1.004x by minima in
// every pass at 8192 x 8192 x 1024 (raster n, walking A: 1.001-1.002x); at 4096 x 4096 x 512 (32 tile columns) it was
// even in the screen (1.003x), and 4 stays there. The H100 did not time panel 2 with the ping-pong.
int wgmma_panel(const Values& p, const Values& c) {
  if (c.integer("panel") != 0) return static_cast<int>(c.integer("panel"));
  const std::int64_t rows = c.text("raster") == "n" ? p.integer("M") : p.integer("N");
  const double walked = static_cast<double>(rows) * static_cast<double>(p.integer("K")) *
                        static_cast<double>(dtype_size(p.dtype()));
  if (walked > static_cast<double>(limits_for_arch("sm_90a").l2_bytes) * 2 / 3) return 16;
  return rows >= 8192 && wgmma_pingpong_pays(p, c) ? 2 : 4;
}

// The kernel's one template argument for a validated problem and config.
GemmWgmmaConfig wgmma_config(const Values& p, const Values& c) {
  const WgmmaTile t = wgmma_tile(p, c);
  return {.block_M = t.block_M,
          .block_N = t.block_N,
          .block_K = 64,
          .num_stages = t.num_stages,
          .panel = wgmma_panel(p, c),
          .raster_n = c.text("raster") == "n",
          .tma_store = tma_store_on(p, c),
          .cluster_M = static_cast<int>(c.integer("cluster_M")),
          .cluster_N = static_cast<int>(c.integer("cluster_N")),
          .bf16 = p.dtype() == DType::bf16,
          .trans_B = p.boolean("trans_B"),
          .out_dtype = static_cast<gemm_detail::OutType>(out_code(p)),
          .stream_k = wgmma_stream_k(p, c),
          .c_split = t.c_split,
          .pingpong = wgmma_pingpong(p, c)};
}
GemmWgmmaPlan wgmma_plan(const Values& p, const Values& c) { return make_plan(wgmma_config(p, c)); }

// The C staging tiles of the TMA-store epilogue, one 64 x block_N tile of out_dtype per consumer: an f32 C doubles
// them.
std::int64_t wgmma_staging(const Values& p, const Values& c) {
  return static_cast<std::int64_t>(wgmma_config(p, c).consumers()) * wgmma_plan(p, c).c_tile_bytes;
}
std::int64_t wgmma_smem(const Values& p, const Values& c) { return wgmma_plan(p, c).bytes; }


// Stream-K's grid: a CTA per SM (capped at the k-steps there are), whatever the tile count, so that a last partial
// wave (or a problem of fewer tiles than SMs) is shared by all of them.
std::int64_t wgmma_stream_k_grid(const Values& p, const Values& c, const DeviceLimits& l) {
  const auto tiles = wgmma_cluster_tiles(p, c), k_steps = (p.integer("K") + 63) / 64;
  return std::max<std::int64_t>(std::min<std::int64_t>(tiles * k_steps, std::max(l.sm_count, 1)), 1);
}

Status check_wgmma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  if (c.text("schedule") == "stream_k" && wgmma_cluster(c) > 1)
    return refuse("schedule=stream_k splits tiles along K between single CTAs; it runs without clusters: set "
                  "cluster_M=1 and cluster_N=1, or schedule=data_parallel");
  if (wgmma_cluster(c) > 2)
    return refuse("cluster_M=" + c.text("cluster_M") + " x cluster_N=" + c.text("cluster_N") +
                  " is a cluster of 4 CTAs; gemm.wgmma pairs 2 CTAs that share one operand: set cluster_M=2 (pairs "
                  "share B) or cluster_N=2 (pairs share A), not both");
  const WgmmaTile tile = wgmma_tile(p, c);
  const std::int64_t bm = tile.block_M, bn = tile.block_N, split = tile.c_split;
  if (wgmma_pingpong(p, c)) {
    if (wgmma_cluster(c) > 1)
      return refuse("schedule=pingpong gives each consumer warpgroup whole tiles of its own in single CTAs: set "
                    "cluster_M=1 and cluster_N=1");
    if (bm != 64 && bm != 128)
      return refuse("schedule=pingpong gives each consumer warpgroup a whole tile as block_M/64 wgmma chains: use "
                    "block_M=128 (with block_N=128) or 64");
    if (bm * bn > 128 * 128)
      return refuse("schedule=pingpong gives each consumer warpgroup a whole " + std::to_string(bm) + "x" +
                    std::to_string(bn) + " tile, " + std::to_string(bm * bn / 128) +
                    " accumulator registers a thread: use block_M=128 with block_N=128, or block_M=64");
  }
  if (bm == 256 && bn > 152)
    return refuse("block_M=256 gives each of the two consumer warpgroups 128 rows as two wgmma chains, 2 x block_N/2 "
                  "accumulator registers a thread: block_N=" + std::to_string(bn) + " needs " + std::to_string(bn) +
                  " of them; use block_N=128 or 152");
  // 192 x 192 (docs/perf.md, 2026-11-27, gemmbf5): at the default's rate per unit of area on the H100 (6144^3, the
  // same 9 waves of 128 x 256 work: 0.99-1.00x), slower where its waves are more (4.5 against 4 at 4096^3: 0.89x);
  // opt-in, no auto.
  if (bm == 192 && (bn != 192 || !p.boolean("trans_B") || c.text("schedule") == "stream_k"))
    return refuse("block_M=192 is cuBLAS's 192 x 192 tile: two consumer warpgroups of 96 columns each as three 64-row "
                  "wgmma chains; it needs block_N=192, trans_B=true (column halves of a K-major B) and the "
                  "data-parallel schedule (schedule auto or data_parallel)");
  if (bm == 256 && (wgmma_cluster(c) > 1 || c.text("schedule") == "stream_k"))
    return refuse("block_M=256 (two 64-row chains a consumer) runs data-parallel single CTAs: set cluster_M=1, "
                  "cluster_N=1 and schedule=auto or data_parallel");
  if (bn == 152 && (wgmma_cluster(c) > 1 || !p.boolean("trans_B")))
    return refuse("block_N=152 is not whole 64-column boxes of an N-major B, nor halves of 8-row swizzle atoms for a "
                  "cluster pair: it needs trans_B=true and cluster_M=cluster_N=1");
  if (c.integer("cluster_M") == 2 && !p.boolean("trans_B") && bn == 192)
    return refuse("cluster_M=2 with trans_B=false multicasts half of B's 64-column boxes from each CTA, and block_N=192 "
                  "is 3 of them: use block_N=128 or 256, or cluster_M=1");
  TL_RETURN_IF_ERROR(check_tma_store(p, c));
  if (split > 1) {
    if (!tma_store_on(p, c))
      return refuse("c_split=" + std::to_string(split) + " splits the TMA-store epilogue's staging tile, but this run "
                    "stores C directly (tma_store off): set c_split=1");
    const GemmWgmmaPlan plan = wgmma_plan(p, c);
    const std::int64_t cols = wgmma_config(p, c).wgmma_n();  // a consumer's staged columns
    if (plan.c_swizzle != 0 && (cols / split) % plan.box_C.inner != 0)
      return refuse("c_split=" + std::to_string(split) + " leaves parts of " + std::to_string(cols / split) +
                    " columns, not whole " + std::to_string(plan.box_C.inner) + "-column staging sub-tiles: use "
                    "c_split=1, or block_N=128 or 256");
  }
  const auto c_bytes = static_cast<std::int64_t>(dtype_size(out_type(p)));
  const std::string stages = std::to_string(tile.num_stages) + " stages of " + std::to_string(bm) + "x64 + " +
                             std::to_string(bn) + "x64 tiles";
  if (wgmma_staging(p, c) == 0) return check_smem(wgmma_smem(p, c), limits, stages, "lower num_stages or block_N");
  return check_smem(wgmma_smem(p, c), limits,
                    stages + " plus the " + std::to_string(bm) + "x" + std::to_string(bn) + " " + dtype_name(out_type(p)) +
                        " C staging tile (" + std::to_string(wgmma_staging(p, c)) + " bytes)",
                    c_bytes == 4 ? "an f32 C stages twice the bytes of a 16-bit one: set tma_store=false (direct "
                                   "stores from registers; the fastest f32 path measured on the H100), or use "
                                   "block_N=128, or lower num_stages"
                                 : "lower num_stages or block_N, or set tma_store=false");
}

KernelSpec gemm_wgmma_spec() {
  KernelSpec k = gemm_tc_base();
  k.name = "gemm.wgmma";
  k.summary = "Hopper GEMM: TMA 128B swizzle, mbarrier pipeline, warp-specialized wgmma, persistent (C = A*op(B), 16-bit in)";
  k.source = "gemm/gemm_wgmma.cuh";
  k.model_timeline = model_wgmma;
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.config = {{ParamSpec::one_of("block_M", 0, {0, 64, 128, 192, 256},
                                 "rows of C per tile: 64 per consumer warpgroup; 256: two consumers of 128 rows each "
                                 "(two 64-row wgmma chains), with block_N 128 or 152; 192 (with block_N=192, trans_B): "
                                 "two consumers of 96 columns each as three m64n96 chains (cuBLAS's 192 x 192; "
                                 "opt-in: on the H100 0.99-1.00x the default at 6144^3, 0.80-0.97x at issue 21's "
                                 "other shapes, slower in 2-CTA clusters); "
                                 "0 = auto: 128 (with schedule=pingpong, or where auto takes it, 128 x 128), or 256 x 152 "
                                 "tiles with 4 stages and c_split=2 where their waves fill the SMs better (K >= 2048); "
                                 "128 x 256 tiles take 4 stages and c_split=2 at K 193-512 and, data-parallel, at "
                                 "K >= 8192 (block_N, num_stages, c_split at their defaults, a 16-bit C, TMA store)"),
               ParamSpec::one_of("block_N", 256, {128, 152, 192, 256},
                                 "columns of C per tile (the wgmma N; 192: fewer columns per wave, but 7-28% slower "
                                 "than 256 at issue 21's eight shapes on the H100; 152: cuBLAS's 256 x 152 tile with "
                                 "block_M=256, trans_B only)"),
               ParamSpec::integer("num_stages", 3, 2, 8, "TMA pipeline depth (block_K = 64 per stage)")}};
  for (ParamSpec& p : hopper_schedule_params())
    k.config.params.push_back(p.name != "panel" ? std::move(p)
                                                : ParamSpec::one_of("panel", 0, {0, 1, 2, 4, 8, 16, 32},
                                                                    "rasterization: tile rows (columns) walked "
                                                                    "together; 0 = auto: 4 where the operand a panel "
                                                                    "walks across (B for raster m, A for n) fits in "
                                                                    "two thirds of a 50 MiB L2 (2 where it is 8192+ "
                                                                    "rows under the auto ping-pong), else 16"));
  k.config.params.push_back(ParamSpec::one_of(
      "cluster_M", 1, {1, 2}, "2: CTA pairs take 2 tiles along M and TMA-multicast the B tile they share (half each)"));
  k.config.params.push_back(ParamSpec::one_of(
      "cluster_N", 1, {1, 2}, "2: CTA pairs take 2 tiles along N and TMA-multicast the A tile they share (half each)"));
  k.config.params.push_back(ParamSpec::one_of(
      "c_split", 1, {1, 2},
      "tma_store: C staged in this many column parts through one part's buffer, so a deeper pipeline fits (256x152 "
      "tiles: 4 stages with c_split=2; 152 columns: two parts of 80, the second from column 72; block_M=0 gives the "
      "128x256 tile 4 stages with c_split=2 at K 193-512 and, data-parallel, at K >= 8192)"));
  k.config.params.push_back(ParamSpec::enumeration(
      "schedule", "auto", {"auto", "data_parallel", "stream_k", "pingpong"},
      "data_parallel: whole tiles; stream_k: the last partial wave's tiles (and the full wave before it) split along "
      "K over all CTAs, partial f32 tiles added by each tile's finisher through a workspace (no clusters); pingpong: "
      "whole tiles, the two consumer warpgroups on alternate tiles of their own and their main loops in turns, so one "
      "stores C while the other's wgmma run (block_M=0 gives 128x128 tiles, block_M=64 64x256; num_stages 3 means the "
      "deepest ring that fits; no clusters); auto: pingpong for the auto tile at K 193-1024 (4-16 k-steps) where "
      "the 128x128 tiles are at least 4 a CTA (a 16-bit C through the TMA store, trans_B, no cluster; H100: 1.05-1.10x "
      "at 4096x4096x512 and 8192x8192x1024, 0.77-0.94x at K >= 4096), else stream_k where the split is predicted to "
      "save over 1% beyond its measured cost (no clusters), else data_parallel"));
  k.can_implement = check_wgmma;
  // Cluster pairs where the one-parameter variations cannot reach: direct stores (the odd-N problems refuse
  // tma_store), an N-major B of one 64-column box per CTA with raster n, and 64 x 128 tiles.
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"cluster_M", "2"}, {"tma_store", "false"}},
        {{"cluster_N", "2"}, {"tma_store", "false"}},
        {{"cluster_M", "2"}, {"block_N", "128"}, {"raster", "n"}, {"panel", "2"}},
        {{"cluster_N", "2"}, {"block_M", "64"}, {"block_N", "128"}, {"num_stages", "4"}},
        // Stream-K with the other epilogue, the other tile shape and the other raster.
        {{"schedule", "stream_k"}, {"tma_store", "false"}},
        {{"schedule", "stream_k"}, {"block_M", "64"}, {"block_N", "128"}, {"raster", "n"}},
        // 192-column tiles (three 64-column boxes of an N-major B, three staging sub-tiles) split and in pairs.
        {{"schedule", "stream_k"}, {"block_N", "192"}},
        {{"cluster_N", "2"}, {"block_N", "192"}},
        // 256-row tiles (two chains a consumer) with the plain 152-column staging, direct stores, and 128 columns.
        {{"block_M", "256"}, {"block_N", "152"}},
        {{"block_M", "256"}, {"block_N", "152"}, {"tma_store", "false"}},
        {{"block_M", "256"}, {"block_N", "128"}, {"num_stages", "4"}},
        {{"block_M", "256"}, {"block_N", "152"}, {"num_stages", "4"}, {"c_split", "2"}},
        {{"c_split", "2"}, {"num_stages", "4"}},
        {{"block_N", "152"}},
        // 192 x 192 tiles (two consumers of 96 columns, three chains each; SWIZZLE_64B staging), 4 stages and direct.
        {{"block_M", "192"}, {"block_N", "192"}, {"num_stages", "4"}},
        {{"block_M", "192"}, {"block_N", "192"}, {"tma_store", "false"}},
        // Ping-pong: 128 x 128 (two chains a consumer, 6 stages), 64 x 256 (one chain, 4 stages), direct stores, an
        // explicit shallow ring.
        {{"schedule", "pingpong"}},
        {{"schedule", "pingpong"}, {"block_M", "64"}},
        {{"schedule", "pingpong"}, {"tma_store", "false"}},
        {{"schedule", "pingpong"}, {"num_stages", "2"}}};
  };
  k.probes = gemm_wgmma_probe_names();
  // Per warp and pipeline iteration: the producer's two regions, or a consumer's two regions and its release (begin +
  // end each), plus an epilogue per tile; iterations = the tiles of the busiest CTA x k-steps.
  // With clusters: the cluster tiles of the busiest cluster (each CTA of a pair walks all of them).
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto tiles = wgmma_cluster_tiles(p, c);
    const auto grid = std::min<std::int64_t>(tiles, std::max<std::int64_t>(l.sm_count / wgmma_cluster(c), 1));
    // Stream-K: at most two pieces of split tiles after the whole ones, together at most one tile.
    const auto per_block = (tiles + grid - 1) / grid + (wgmma_config(p, c).stream_k ? 2 : 0);
    const auto iterations = per_block * ((p.integer("K") + 63) / 64);
    return static_cast<std::uint32_t>(5 * iterations + 2 * per_block + 64);
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(wgmma_config(p, c)); };
  // Persistent: one CTA per SM at most (the device's SM count, 132 on the H100), capped at the tile count.
  // Clusters: 1-D clusters of cluster_M * cluster_N CTAs along x, the grid capped at the cluster tiles and at
  // SMs / 2 pairs (the H100's 66 TPCs hold one pair each).
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    LaunchGeometry g;
    const auto cluster = wgmma_cluster(c);
    const std::int64_t clusters = std::max<std::int64_t>(l.sm_count / cluster, 1);
    g.grid.x = static_cast<std::uint32_t>(wgmma_config(p, c).stream_k
                                              ? wgmma_stream_k_grid(p, c, l)
                                              : std::min<std::int64_t>(wgmma_cluster_tiles(p, c), clusters) * cluster);
    g.cluster.x = static_cast<std::uint32_t>(cluster);
    g.persistent = true;  // the launcher shrinks the grid to the CTAs (pairs) this GPU holds at once
    g.block.x = static_cast<std::uint32_t>(wgmma_config(p, c).threads());
    g.dynamic_smem = static_cast<std::uint32_t>(wgmma_smem(p, c));
    return g;
  };
  // Kernel signature: (tma_A, tma_B, tma_C, C, M, N, K); A and B are reached only through their tensor maps, with
  // the plan's boxes: A (64 k, block_M m); B N x K: (64 k, block_N n); B K x N: (64 n, 64 k), block_N/64 of them per
  // stage; C: (128 bytes of columns, 64 rows) per staging sub-tile. The operand a cluster pair shares (A for
  // cluster_N=2, an N x K B for cluster_M=2) is loaded half by each CTA: its box has half the rows.
  // Stream-K adds (workspace, flags, split_always): a partial tile per CTA and a flag per CTA and consumer, scratch
  // (zeroed once; the kernel leaves the flags at zero), and whether the split is asked for (schedule=stream_k: 1) or
  // left to the kernel's own gemm_stream_k_pays on its grid (auto: 0).
  k.args = [](const Values& p, const Values& c, const DeviceLimits& l) {
    auto ops = operands(p);
    ops[0].is_param = ops[1].is_param = false;
    const GemmWgmmaPlan plan = wgmma_plan(p, c);
    const int swizzle = swizzle_bytes(SmemSwizzle::b128);
    auto box = [](GemmWgmmaPlan::Box b) { return std::vector<std::int64_t>{b.inner, b.outer}; };
    std::vector<ArgSpec> a = {ops[0], ops[1],
                              ArgSpec::tensor_map("tma_A", "A", box(plan.box_A), swizzle),
                              ArgSpec::tensor_map("tma_B", "B", box(plan.box_B), swizzle),
                              // Without tma_store the kernel never reads tma_C, and C's rows need not be
                              // 16-byte multiples: pass a valid map of A in its place.
                              tma_store_on(p, c) ? ArgSpec::tensor_map("tma_C", "C", box(plan.box_C), plan.c_swizzle)
                                                 : ArgSpec::tensor_map("tma_C", "A", box(plan.box_A), swizzle),
                              ops[2]};
    for (auto& s : sizes(p)) a.push_back(std::move(s));
    if (wgmma_config(p, c).stream_k) {
      const std::int64_t grid = wgmma_stream_k_grid(p, c, l);
      a.push_back(ArgSpec::tensor("workspace", DType::f32, {grid, plan.partial_floats}, ArgRole::scratch));
      a.push_back(ArgSpec::tensor("flags", DType::i32, {grid * wgmma_config(p, c).consumers()}, ArgRole::scratch));
      a.push_back(ArgSpec::scalar("split_always", DType::i32, c.text("schedule") == "stream_k" ? 1 : 0));
    }
    return a;
  };
  // The plan's tiles as TMA writes them and wgmma reads them: smem_B K-major (trans_B) or MN-major (.mn: 64-column
  // blocks of 64 k-rows, the descriptor's transpose-B mode); wgmma_C a consumer's accumulator; smem_C the staging
  // tile of one consumer warpgroup.
  k.layouts = [](const Values& p, const Values& c) {
    const GemmWgmmaConfig cfg = wgmma_config(p, c);
    const GemmWgmmaPlan plan = make_plan(cfg);
    const std::string in = dtype_name(p.dtype());
    std::vector<LayoutInfo> l = {{"smem_A", memory_spec(plan.smem_A, in)}, {"smem_B", memory_spec(plan.smem_B, in)}};
    if (auto acc = fragment_spec(plan.acc, "wgmma.m64n" + std::to_string(cfg.wgmma_n()) + "k16.f32.C"))
      l.push_back({"wgmma_C", *acc});
    if (cfg.tma_store && plan.c_swizzle != 0) l.push_back({"smem_C", memory_spec(plan.smem_C, dtype_name(out_type(p)))});
    return l;
  };
  return k;
}

// [SECTION] gemm.fp8

// C[M,N] = (scale_A A[M,K]) (scale_B B[N,K])^T, A and B e4m3 (B K-major, as FP8 wgmma and cuBLASLt's FP8 GEMM
// require), fp32 accumulation, C bf16 or f32. The scales' shapes follow `scaling` (gemm_fp8_plan.hpp).
Schema gemm_fp8_problem() {
  return {{ParamSpec::integer("M", 4096, 1, 1 << 20, "rows of A and C"),
           ParamSpec::integer("N", 4096, 1, 1 << 20, "columns of C, rows of B (B is stored N x K)"),
           ParamSpec::integer("K", 4096, 1, 1 << 20, "the reduction; a multiple of 16 (16-byte rows of e4m3)"),
           ParamSpec::enumeration("scaling", "tensor", {"tensor", "row", "block"},
                                  "scales: tensor = one per operand; row = scale_A per row of A and scale_B per column "
                                  "of C; block = DeepSeek-V3's, scale_A [M, K/128] and scale_B [N/128, K/128] (128 x "
                                  "128 blocks of B)"),
           ParamSpec::enumeration("out_dtype", "bf16", {"bf16", "f32"}, "type of C; accumulation is fp32 always"),
           ParamSpec::enumeration("scale_a_layout", "k", {"k", "mn"},
                                  "block scaling's scale_A: k = [M, K/128], each row's k blocks contiguous; mn = [K/128, "
                                  "M], each k block's M scales contiguous (M-major: DeepGEMM's and cuBLASLt's 1 x 128 "
                                  "layout; TMA boxes of the tile's rows where M is a multiple of 4); no effect on "
                                  "tensor and row scales")}};
}

// scale_A M-major, [K/128, M] (scale_a_layout=mn; it lays out block scales only: tensor and row scales ignore it, so
// that setting it alone never leaves the default scaling unrunnable).
bool fp8_scale_a_mn(const Values& p) { return p.text("scale_a_layout") == "mn"; }

gemm_detail::Fp8Scaling fp8_scaling(const Values& p) {
  const std::string s = p.text("scaling");
  return s == "block" ? gemm_detail::kScaleBlock : s == "row" ? gemm_detail::kScaleRow : gemm_detail::kScaleTensor;
}

// The k blocks (and, for B, n blocks) of the block scales: 128 wide, the last one partial.
std::int64_t fp8_blocks(std::int64_t n) { return (n + 127) / 128; }

// The shapes of scale_A and scale_B.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> fp8_scale_shapes(const Values& p) {
  const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  switch (fp8_scaling(p)) {
    case gemm_detail::kScaleBlock:
      if (fp8_scale_a_mn(p)) return {{fp8_blocks(K), M}, {fp8_blocks(N), fp8_blocks(K)}};
      return {{M, fp8_blocks(K)}, {fp8_blocks(N), fp8_blocks(K)}};
    case gemm_detail::kScaleRow: return {{M}, {N}};
    default: return {{1}, {1}};
  }
}

// The main loop's shared-memory bytes per tensor-core clock of a promoting 128-row tile (two consumers) block_N
// columns wide in chains of wgmma_N: the stage's TMA writes, (128 + block_N) x 128 bytes per 128 x block_N x 128
// MACs, and each chain's wgmma reads, A (2 KB) and B (wgmma_N x 32 bytes) per m64 n{wgmma_N} k32 (8192 e4m3 FLOP a
// clock and SM). Shared memory moves 128 B a clock: 144 at 128 x 256 in two 128-column chains, 138.7 at 192 in one,
// 160 at 128, 224 at 64.
double fp8_smem_bytes_per_clock(int block_N, int wgmma_N) {
  return 4096.0 * (128 + block_N) / (128.0 * block_N) + 4096.0 / wgmma_N + 64;
}

// block_N=0 (auto), for 128-row tiles with chains left to auto: of the widths it may take, the one with the fewest
// tile-clocks on the persistent grid of an H100 / H200 (132 SMs): the waves of tiles a CTA walks, times the tile's
// columns, times fp8_smem_bytes_per_clock. The wide widths: 192 (one chain a consumer) only for promoting tensor and
// row scales (fast accumulation runs one 256-column chain, and block scales run 256 columns with A from registers,
// 2-6% faster than 192 on the H100), else 256. On the H100 (docs/perf.md, 2026-11-26, two calls) 192 won at 8192^3
// (tensor +2.0-2.6%, row +1.8-2.4%) and 16384^2 x 4096 (+2.5-3.6%, +1.4-2.7%) and lost at 4096^3 (-10%) and 4096 x
// 7168 x 2048 (-3% to -7%), as this count says. Where the wide tiles do not fill one wave (small M: 38 CTAs of
// 128 x 192 at M = 128, N = 7168), most SMs would idle and each CTA's few k blocks run at one CTA's memory latency, so
// 64- and 128-column tiles compete too (with the deepest pipeline that fits, fp8_num_stages). On the H100
// (docs/perf.md, 2026-11-26, N 7168, K 2048, two rounds) the count's pick was the fastest width at M 64-256 (128 x 64
// at M <= 128, 128 x 128 at 200 and 256: 1.25-1.65x the wide tiles), and at M 1000, the wide tiles' second wave, the
// narrow ones ran 2-34% slower than the 256 columns it keeps there.
// block_M=0 (auto) at M <= 64 (one 64-row tile row), tensor and row scales, the widths and the schedule left to auto
// (no fast_accum, overlap or a_regs): one consumer's 64 x 64 tiles (112 CTAs at N 7168, each tile's rows all real),
// row scales staged (fp8_scale_stage). On an H200 (docs/perf.md, 2026-11-28, fp8small3, M 64, N 7168, K 2048, two
// alternated rounds, 200 runs a row) 64 x 64 ran 1.47x the 128 x 64 tiles it replaces (half of whose rows are past M)
// per-tensor and 1.42-1.43x with row scales by medians under cupti (1.27-1.30x under events; minima alike), every
// round, and 1.03x cuBLASLt per-tensor (cupti; 1.10x events); 64 x 112 (1.18-1.29x), 64 x 112 with uniform_desc
// (1.16-1.29x) and 64 x 128 (1.12-1.21x) less. Block scales and M 65-127 were not timed: 128 rows there.
bool fp8_small_m64(const Values& p, const Values& c) {
  return c.integer("block_M") == 0 && p.integer("M") <= 64 && p.text("scaling") != "block" &&
         c.integer("block_N") == 0 && c.integer("wgmma_N") == 0 && !c.boolean("fast_accum") && !c.boolean("overlap") &&
         c.text("a_regs") != "true";
}
int fp8_block_m(const Values& p, const Values& c) {
  if (c.integer("block_M") != 0) return static_cast<int>(c.integer("block_M"));
  return fp8_small_m64(p, c) ? 64 : 128;
}

int fp8_block_n(const Values& p, const Values& c) {
  if (c.integer("block_N") != 0) return static_cast<int>(c.integer("block_N"));
  if (fp8_small_m64(p, c)) return 64;
  const auto wn = c.integer("wgmma_N");
  if (fp8_block_m(p, c) != 128 || c.boolean("overlap") || c.text("a_regs") == "true" || (wn != 0 && wn != 192))
    return 256;
  const bool fast = c.boolean("fast_accum");
  const std::int64_t sms = limits_for_arch("sm_90a").sm_count, tiles_m = (p.integer("M") + 127) / 128;
  auto tiles = [&](int bn) { return tiles_m * ((p.integer("N") + bn - 1) / bn); };
  auto cost = [&](int bn) {
    const int chain = fast || bn <= 192 ? bn : 128;  // fp8_wgmma_n's auto chains
    return static_cast<double>((tiles(bn) + sms - 1) / sms) * bn * fp8_smem_bytes_per_clock(bn, chain);
  };
  const int wide = !fast && p.text("scaling") != "block" && cost(192) < cost(256) ? 192 : 256;
  if (wn == 192 || tiles(wide) >= sms) return wide;
  int best = wide;
  for (int bn : {128, 64})
    if (cost(bn) < cost(best)) best = bn;
  return best;
}

// num_stages=0 (auto), as many stages as fit the shared memory up to: 8 beside tiles narrower than 192 columns, which
// are small M's (fp8_block_n): one wave of CTAs that each walk few k blocks, where the loads in flight are what keeps
// HBM busy (128 x 64 tiles with 8 stages ran 1.00-1.09x cuBLASLt at M = 128); 4 beside 192 columns where the grid
// walks at most 32 waves of tiles, else 3; 3 beside 256 columns (a fourth stage needs c_split there and measured
// +0.5% to -2.1%). On the H100 (docs/perf.md, 2026-11-26, same call, two rounds) the fourth stage beside 128 x 192
// tiles won at 8192 x 8192 (21 waves; tensor +2.1-2.9% at K 8192 and +2.9-3.2% at K 4096, row +1.1-2.7%) and not at
// 16384 x 16384 (84 waves; K 4096: -0.4% to -1.2%; K 8192 mixed): the grid's length separates them, not K (why is
// not known: the long grids also run under the power cap). Grids between 21 and 84 waves were not measured.
int fp8_num_stages(const Values& p, const GemmFp8Config& cfg, const Values& c) {
  if (c.integer("num_stages") != 0) return static_cast<int>(c.integer("num_stages"));
  const std::int64_t sms = limits_for_arch("sm_90a").sm_count;
  const std::int64_t tiles = ((p.integer("M") + cfg.block_M - 1) / cfg.block_M) *
                             ((p.integer("N") + cfg.block_N - 1) / cfg.block_N);
  GemmFp8Config deep = cfg;
  deep.num_stages = cfg.block_N < 192 ? 8 : cfg.block_N == 192 && (tiles + sms - 1) / sms <= 32 ? 4 : 3;
  for (; deep.num_stages > 3; --deep.num_stages)
    if (make_plan(deep).bytes <= limits_for_arch("sm_90a").smem_per_block_optin) break;
  return deep.num_stages;
}

// wgmma_N=0 (auto): the whole tile in one chain where the accumulators allow it (fast accumulation keeps no partial
// sums: 10% faster at 256 than two 128-column chains on the H100; 192 promoting), else 128-column chains.
int fp8_wgmma_n(const Values& p, const Values& c) {
  if (c.integer("wgmma_N") != 0) return static_cast<int>(c.integer("wgmma_N"));
  const int bn = fp8_block_n(p, c);
  return c.boolean("fast_accum") || bn == 192 ? bn : std::min(bn, 128);
}

// Block scales by TMA (GemmFp8Config::scale_tma), with block scales whose rows are whole 16-byte units (ceil(K/128) a
// multiple of 4: the tensor maps' rule; issue 21's anchors all are; an M-major scale_A's rows also M a multiple of
// 4); else the producer warp's cp.async. auto: on for
// the wide tiles of two consumer warpgroups (block_M 128, 192 or more columns), where A then stays in shared memory
// (fp8_a_regs): on the H100 (docs/perf.md, 2026-11-27, merged-main call, two rounds) 1.047-1.100x the cp.async scales
// with A in registers at 8192^3, 4096^3 and 4096 x 7168 x 2048 by medians and minima; with A in registers 0.98-1.04x.
// The narrow tiles of small M (one consumer or 64-128 columns) were not timed with it: off there.
bool fp8_scale_tma(const Values& p, const Values& c) {
  if (p.text("scaling") != "block" || fp8_blocks(p.integer("K")) % 4 != 0) return false;
  if (fp8_scale_a_mn(p) && p.integer("M") % 4 != 0) return false;
  const std::string v = c.text("scale_tma");
  if (v != "auto") return v == "true";
  return fp8_block_m(p, c) == 128 && !c.boolean("overlap") && c.text("a_regs") != "true" && fp8_block_n(p, c) >= 192;
}

// Row scales staged in shared memory at the tile's start (GemmFp8Config::scale_stage): the epilogue's scale_B and
// scale_A come from the consumer's slot, not from 130 global loads a thread after the last promotion (0.8 us of a
// ~1.85 us epilogue at 4096 x 7168 x 2048, fp8blk10's timeline). `auto`: on for row scales on tiles of two
// promoting consumers (block_M 128, any width), where on the H100 it was 1.034-1.052x the global loads at 4096 x 7168
// x 2048, 1.008-1.020x at 4096^3 and 1.003-1.005x at 8192^3 (128 x 192 tiles) by medians, 1.001-1.054x by minima, in
// every round (docs/perf.md, 2026-11-27, fp8blk11, four alternated rounds), and on the narrow tiles of small M (N 7168,
// K 2048: 128 x 64 at M 128, 128 x 128 at M 200 and 256) 1.026-1.061x, 1.030-1.038x (M 128, 256; the lead's call of
// 2026-11-27) and 1.031-1.045x, 1.021-1.035x, 1.027-1.054x (M 128, 200, 256; fp8blk12's call of 2026-11-28, minima
// 1.018-1.048x) by medians in every round of two calls, and on the 64 x 64 tiles of M <= 64's auto (fp8_small_m64),
// which were timed with it. Other one-consumer tiles (block_M 64) and fast accumulation were not timed with it: off
// there. Tensor scales (each consumer thread's cp.async of the two into its own slot at the tile's start, the
// epilogue's scalar from there instead of two global loads after the last k block): on for the block_M=128 tiles
// without fast_accum other than 128 x 192 (and not beside scale_early=true), where on an H200 (docs/perf.md, session
// 47's fourth lead call, N 7168, K 2048, two alternated rounds, 200 runs a row) it ran 1.02-1.07x the epilogue's loads
// at M 128, 1.01-1.04x at M 256 and 1.003-1.013x at 4096 x 7168 x 2048 (128 x 256) by medians under cupti and
// 1.00-1.02x under events in every round; off on the 128 x 192 tiles of 8192^3 and 16384^2 x 4096, where it lost
// (16384^2 x 4096 0.98-0.99x in both rounds under both timers, 8192^3 mostly slower; session 47's fifth call), and on
// the 64 x 64 tiles of M <= 64, where scale_early (auto there) was 1% faster. Block scales: nothing to stage.
bool fp8_scale_stage(const Values& p, const Values& c) {
  if (p.text("scaling") == "block") return false;
  const std::string v = c.text("scale_stage");
  if (v != "auto") return v == "true";
  const bool two_consumers = fp8_block_m(p, c) == 128 && !c.boolean("fast_accum");
  if (p.text("scaling") == "tensor")
    return two_consumers && fp8_block_n(p, c) != 192 && c.text("scale_early") != "true";
  return two_consumers || fp8_small_m64(p, c);
}

// A from registers (GemmFp8Config::a_regs): `auto` takes it for block scales with two consumer warpgroups, where it
// measured 2-6.5% faster on the H100 at issue 21's four large anchors (the chains read B only from shared memory);
// per-tensor and row scales measured 6-12% slower with it, and block scales on one consumer (M = 128's 64 x 128
// tiles) 2% slower (docs/perf.md, 2026-11-26); on 128 x 192 tiles 1.5% faster at 8192^3 and 16384^2 x 4096.
bool fp8_a_regs(const Values& p, const Values& c) {
  const std::string v = c.text("a_regs");
  if (v != "auto") return v == "true";
  return p.text("scaling") == "block" && fp8_block_m(p, c) == 128 && !c.boolean("fast_accum") &&
         !c.boolean("overlap") && !fp8_scale_tma(p, c);
}

// The consumers' wgmma descriptors from warp-uniform values (`uniform_desc` of the K-major main loop, gemm_kmajor.cuh:
// GemmFp8Config::uniform_desc and GemmGroupedConfig::uniform_desc, one rule for both kernels, on their resolved
// configs): a chain's four wgmma then issue back to back (28 + 4 SASS from WARPGROUP.ARRIVE to a k block's two chains'
// last wgmma against 58 + 24, no R2UR). true / false force it (it applies to every config the main loop runs: nothing
// is refused). `auto`:
// - e4m3 (gemm.fp8): on for the 128 x 256 tiles of two 128-column chains with A from shared memory and the promotion,
//   where on an H200 (the device tool's pool) it was 1.020-1.044x the per-thread descriptors by medians (minima
//   1.020-1.047x) in all four alternated rounds, every scaling, at 4096^3 and 4096 x 7168 x 2048 (and block scales at
//   8192^3 and 16384^2 x 4096; docs/perf.md, 2026-11-28, fp8blk15), and on the 128 x 192 tiles (one chain) with tensor
//   and row scales, where on an H100 it was 1.016-1.025x at 8192^3 (tensor and row) and 1.012-1.014x at 16384^2 x 4096
//   (row) by medians in both alternated rounds, even per-tensor there (0.998-1.003x), as on the H200 (1.014-1.034x, even
//   per-tensor at 16384^2 x 4096; docs/perf.md, session 46's merged calls). Off elsewhere: block scales on 128 x 192
//   tiles (untimed: block scales take 128 x 256 tiles at those shapes); on the narrow tiles of small M (128 x 64, 128 x
//   128) it was mixed, block scales at M 256 0.986-0.991x; fast accumulation, A from registers and one consumer were
//   checked but not timed. gemm.grouped's e4m3 (the same main loop and tiles): on an H200 in session 47's merged
//   call 1.100-1.111x the per-thread descriptors by medians in both A B B A rounds at G 8 x 2048 and G 32 x 512 with
//   row scales and 1.104-1.108x at G 8 x 2048 with block scales (minima alike), even at G 64 x 128 (0.99-1.01x).
// - bf16 (gemm.grouped; one 256-column chain accumulating in place): on for 128 x 256 tiles, where on an H200 it was
//   1.044-1.054x the per-thread descriptors by medians (minima 1.045-1.053x) in both alternated rounds at G 8 x 2048 and
//   G 32 x 512 (N 4096, K 7168), and 1.004-1.013x in the one part-round at G 64 x 128 (docs/perf.md, 2026-11-28,
//   grouped3). Off on the narrower tiles (untimed).
template <class Config>
bool kmajor_uniform_desc_on(const Values& c, const Config& cfg) {
  const std::string v = c.text("uniform_desc");
  if (v != "auto") return v == "true";
  if (cfg.in_bytes() == 2) return cfg.block_M == 128 && cfg.block_N == 256;
  const bool promote = !cfg.fast_accum;
  const bool two_chains = cfg.block_N == 256 && cfg.wgmma_N == 128;
  const bool one_chain = cfg.block_N == 192 && cfg.wgmma_N == 192 && cfg.scaling != gemm_detail::kScaleBlock;
  return cfg.block_M == 128 && (two_chains || one_chain) && promote && !kmajor_a_regs(cfg) &&
         kmajor_part_buffers(cfg) == 1;
}

// The schema entry of that switch (gemm.fp8's and gemm.grouped's).
ParamSpec kmajor_uniform_desc_param() {
  return ParamSpec::enumeration(
      "uniform_desc", "auto", {"auto", "true", "false"},
      "the consumers' wgmma descriptors built from warp-uniform values (redux.sync), kept in uniform registers and "
      "stepped by a uniform add per chain and k step, instead of built per thread and moved over (R2UR) before each "
      "wgmma; auto: e4m3 on for 128x256 tiles of two 128-column chains "
      "and, with tensor and row scales, 128x192 tiles of one chain, with A from shared memory and the promotion "
      "(fast_accum off); bf16 (gemm.grouped) on for 128x256 tiles");
}

// Tensor scales loaded at the kernel's start (GemmFp8Config::scale_early): the epilogue's scale_A[0] * scale_B[0] from a
// register, not two global loads after the last k block that wait on HBM (the L2 flushed; row scales staged at the
// tile's start ran 4% faster than per-tensor on the same 128 x 64 tiles at M 128, docs/perf.md, fp8small2). It lost:
// on an H200 (docs/perf.md, 2026-11-28, fp8small3, two alternated rounds, 200 runs a row) 0.93-0.96x the epilogue's
// loads at M 128 (N 7168, K 2048; cupti and events, minima alike), 0.98-0.99x at M 64 and 256, even at 4096 x 7168 x
// 2048; the consumers' main loop was also scheduled anew (registers), so which of the two costs is not known.
// On the 64 x 64 tiles of block_M's auto at M <= 64 it won with prefetch_maps (both on, as fp8_prefetch_maps): on an
// H200 in session 47's second lead call (docs/perf.md, two alternated rounds, 200 runs a row, N 7168, K 2048) 6.9 ->
// 6.7 us at M 64 (cuBLASLt / ours 0.995 -> 1.033-1.038 by medians under cupti, 1.043-1.055 -> 1.072-1.086 under
// events) and 7.6 -> 7.3-7.4 us at M 32 (0.822-0.831 -> 0.857-0.860; events 0.922-0.939 -> 0.945-0.956), every round;
// at M 128 (128 x 64 tiles) the pair lost again (0.861-0.865 against 0.906-0.907). `auto`: on there (per-tensor at
// M <= 64 with the auto tiles), else off. Row and block scales: nothing to load early (they have their own staging).
bool fp8_scale_early(const Values& p, const Values& c) {
  if (p.text("scaling") != "tensor") return false;
  const std::string v = c.text("scale_early");
  if (v != "auto") return v == "true";
  return fp8_small_m64(p, c) && c.text("scale_stage") != "true";  // (staged: the epilogue's scalar from there)
}

// The tensor maps' descriptors prefetched by thread 0 before the barriers' init (GemmFp8Config::prefetch_maps): A's
// and B's (the block scales' with scale_tma) earlier than after the __syncthreads, and C's (tma_store), which was
// fetched by the first bulk store after the last k block. On an H200 (docs/perf.md, 2026-11-28, fp8small3, two
// alternated rounds) it was within noise: 0.993-1.017x by medians at M 64, 128, 256 (N 7168, K 2048) and 0.995-1.000x
// at 4096 x 7168 x 2048, not winning every round under both timers anywhere. `auto`: on with scale_early's auto
// (per-tensor on the 64 x 64 tiles at M <= 64, where the two were timed together and won), else off (with row scales
// there +0-1%, not settled).
bool fp8_prefetch_maps(const Values& p, const Values& c) {
  const std::string v = c.text("prefetch_maps");
  if (v != "auto") return v == "true";
  return p.text("scaling") == "tensor" && fp8_small_m64(p, c);
}

// The first tile's first stages loaded by the elected thread right after the barriers' init, before the __syncthreads
// and the register hand-over (GemmFp8Config::early_loads; tensor and row scales). `auto`: on for the narrow tiles of
// small M (block_N <= 128) where the grid is one wave (at most one tile a CTA: the tiles no more than the SMs), where
// each CTA's one tile starts its k loop with the first load's latency; on an H200 (docs/perf.md, 2026-11-28,
// fp8m128t, N 7168, K 2048, two A B B A rounds, 200 runs a row) it ran 1.005-1.033x the default by medians under cupti
// and 1.001-1.025x under events at M 64, 128 and 256 (64 x 64, 128 x 64 and 128 x 128 tiles, 112 CTAs), tensor and
// row scales, in every round (minima 1.000-1.037x); off on longer grids, where at 4096 x 7168 x 2048 (128 x 256, 6.8
// waves) it was even (0.999-1.002x), and on one wave of wider tiles (M 257: 114 tiles of 128 x 192), untimed.
std::int64_t fp8_tiles(const Values& p, const Values& c);
bool fp8_early_loads(const Values& p, const Values& c) {
  if (p.text("scaling") == "block") return false;
  const std::string v = c.text("early_loads");
  if (v != "auto") return v == "true";
  return fp8_block_n(p, c) <= 128 && fp8_tiles(p, c) <= limits_for_arch("sm_90a").sm_count;
}

GemmFp8Config fp8_config(const Values& p, const Values& c) {
  auto i = [&](const char* name) { return static_cast<int>(c.integer(name)); };
  GemmFp8Config cfg{.block_M = fp8_block_m(p, c),
                    .block_N = fp8_block_n(p, c),
                    .block_K = 128,
                    .wgmma_N = fp8_wgmma_n(p, c),
                    .num_stages = 3,
                    .panel = i("panel"),
                    .raster_n = c.text("raster") == "n",
                    .tma_store = tma_store_on(p, c),
                    .fast_accum = c.boolean("fast_accum"),
                    .scaling = fp8_scaling(p),
                    .out_dtype = p.text("out_dtype") == "f32" ? gemm_detail::kOutF32 : gemm_detail::kOutBf16,
                    .overlap = c.boolean("overlap"),
                    .a_regs = fp8_a_regs(p, c),
                    .c_split = static_cast<int>(c.integer("c_split")),
                    .ping_pong = c.boolean("ping_pong"),
                    .scale_tma = fp8_scale_tma(p, c),
                    .scale_a_mn = fp8_scaling(p) == gemm_detail::kScaleBlock && fp8_scale_a_mn(p),
                    .scale_stage = fp8_scale_stage(p, c),
                    .scale_early = fp8_scale_early(p, c),
                    .prefetch_maps = fp8_prefetch_maps(p, c),
                    .early_loads = fp8_early_loads(p, c)};
  cfg.num_stages = fp8_num_stages(p, cfg, c);
  // scale_stage's auto yields to a hand-set pipeline whose shared memory has no room for its slots (the auto depth
  // counts them).
  if (cfg.scale_stage && c.text("scale_stage") == "auto" &&
      make_plan(cfg).bytes > limits_for_arch("sm_90a").smem_per_block_optin)
    cfg.scale_stage = false;
  cfg.uniform_desc = kmajor_uniform_desc_on(c, cfg);
  return cfg;
}
GemmFp8Plan fp8_plan(const Values& p, const Values& c) { return make_plan(fp8_config(p, c)); }

std::int64_t fp8_tiles(const Values& p, const Values& c) {
  const std::int64_t bn = fp8_block_n(p, c);
  const std::int64_t bm = fp8_block_m(p, c);
  return ((p.integer("M") + bm - 1) / bm) * ((p.integer("N") + bn - 1) / bn);
}

// The e4m3 main loop's rules (gemm_kmajor.cuh; gemm.fp8 and gemm.grouped's e4m3): chains that split the tile, block
// scales only with the promotion, accumulators that fit the registers; and the TMA-store epilogue's.
template <class Config>
Status check_kmajor(const Values& p, const Values& c, const Config& cfg) {
  // The values in effect (gemm.fp8's auto widths resolved).
  const std::string bn = std::to_string(cfg.block_N), wn = std::to_string(cfg.wgmma_N);
  if (cfg.in_bytes() == 1 && cfg.block_N % cfg.wgmma_N != 0)
    return refuse("wgmma_N=" + wn + " does not divide block_N=" + bn +
                  ": each k block runs block_N / wgmma_N wgmma chains side by side; use wgmma_N <= block_N");
  if (cfg.fast_accum && cfg.scaling == gemm_detail::kScaleBlock)
    return refuse("fast_accum=true leaves all of K to the tensor cores' accumulator, but block scales change every "
                  "128 k and must multiply each k block's partial sums: set fast_accum=false, or use scaling=tensor "
                  "or row");
  const bool promote = cfg.in_bytes() == 1 && !cfg.fast_accum;
  const int buffers = kmajor_part_buffers(cfg);
  if (buffers == 2 && !promote)
    return refuse("overlap=true overlaps the promotion of one wgmma chain with the next, but fast_accum=true (or bf16) "
                  "promotes nothing: set overlap=false");
  if (kmajor_a_regs(cfg) && !promote)
    return refuse("a_regs=true keeps one k block of A in registers for the promoting main loop's chains, but "
                  "fast_accum=true (or bf16) promotes nothing: set a_regs=false");
  if (kmajor_ping_pong(cfg) && (!promote || buffers == 2 || cfg.consumers() != 2))
    return refuse(std::string("ping_pong=true lets two promoting consumer warpgroups take turns issuing their wgmma "
                              "chains; ") +
                  (!promote ? "fast_accum=true (or bf16) promotes nothing"
                   : buffers == 2 ? "overlap=true keeps two chains of one consumer in flight"
                                  : "block_M=" + std::to_string(cfg.block_M) + " has one consumer") +
                  ": set ping_pong=false");
  if (buffers == 2 && cfg.chunks() % 2 != 0)
    return refuse("overlap=true alternates two partial-sum buffers between the chains of a k block, so block_N / "
                  "wgmma_N must be even; block_N=" + bn + ", wgmma_N=" + wn +
                  ": use wgmma_N=" + std::to_string(cfg.block_N / 2) + " or less");
  // A consumer thread holds block_N / 2 accumulators, plus wgmma_N / 2 partial sums per buffer when it promotes, in
  // the 232 registers setmaxnreg gives it (with ~30 for addresses and scales).
  const auto regs = cfg.block_N / 2 + (promote ? buffers * cfg.wgmma_N / 2 : 0);
  if (regs > 200)
    return refuse("block_N=" + bn + " with wgmma_N=" + wn +
                  (buffers == 2 ? " and overlap=true" : "") + " holds " + std::to_string(regs) +
                  " accumulator registers per thread (block_N/2 + wgmma_N/2 partial sums per buffer), more than the "
                  "232 a consumer has beside its addresses: use wgmma_N=" +
                  std::to_string(cfg.block_N / (buffers == 2 ? 4 : 2)) + ", or fast_accum=true");
  return check_tma_store(p, c);
}

// What the main loop's shared memory holds, for a refusal: the stages and the staging tile.
template <class Config>
std::string kmajor_smem_use(const Values& p, const Values& c, const Config& cfg, const GemmFp8Plan& plan) {
  const std::string k = std::to_string(cfg.block_K), in = cfg.in_bytes() == 1 ? "e4m3" : "bf16";
  const std::string bn = std::to_string(cfg.block_N);
  std::string what = std::to_string(cfg.num_stages) + " stages of " + std::to_string(cfg.block_M) + "x" + k + " + " + bn + "x" +
                     k + " " + in + " tiles";
  if (cfg.tma_store)
    what += " plus the " + std::to_string(cfg.block_M) + "x" + bn + " " + p.text("out_dtype") + " C staging tile (" +
            std::to_string(cfg.consumers() * plan.c_tile_bytes) + " bytes)";
  return what;
}
template <class Config>
std::string kmajor_smem_fix(const Config& cfg) {
  return cfg.tma_store ? "lower num_stages or block_N, or set tma_store=false" : "lower num_stages or block_N";
}

Status check_fp8(const Values& p, const Values& c, const DeviceLimits& limits) {
  if (p.integer("K") % 16 != 0)
    return refuse("K=" + p.text("K") + " is not a multiple of 16: TMA copies the e4m3 rows of A and B (1 byte per "
                  "element) in 16-byte units; pad K to a multiple of 16 (zeros add nothing)");
  if (c.integer("num_stages") == 1)
    return refuse("num_stages=1 leaves the TMA loads no stage to fill while the consumers read one: use 2-8, or 0 "
                  "(auto)");
  // scale_tma / scale_stage set true where they cannot apply were dropped without a word (the run record named a config
  // that did not run): refused naming them, the problem's scaling and what to change. (scale_a_layout is a problem
  // parameter that tensor and row scales ignore on purpose: set alone it must leave a runnable problem.)
  if (c.text("scale_tma") == "true" && !fp8_scale_tma(p, c))
    return refuse(std::string("scale_tma=true loads block scales by TMA boxes of 4 k blocks; ") +
                  (p.text("scaling") != "block"
                       ? "this problem has scaling=" + p.text("scaling") + ", which has no block scales: set scaling=block"
                   : fp8_blocks(p.integer("K")) % 4 != 0
                       ? "K=" + p.text("K") + " has " + std::to_string(fp8_blocks(p.integer("K"))) +
                             " k blocks, not a multiple of 4 (16-byte rows of scales): pad K to a multiple of 512"
                       : "an M-major scale_A (scale_a_layout=mn) needs M a multiple of 4 for its rows, and M=" +
                             p.text("M") + ": set scale_a_layout=k") +
                  ", or leave scale_tma at auto or false (the producer warp's cp.async)");
  // 112 columns (cuBLASLt's 64 x 112 tile of small M): a tile then starts inside a 128-column block of B's scales
  // at a column no multiple of 64, which the block-scale promotion does not read (its static_assert).
  if (p.text("scaling") == "block" && (c.integer("block_N") == 112 || c.integer("wgmma_N") == 112))
    return refuse("block_N=112 (or wgmma_N=112) starts tiles inside a 128-column block of scale_B at columns that "
                  "are no multiple of 64, which block scales cannot read: use block_N=64 or 128 with block scales, "
                  "or scaling=tensor or row");
  if (c.text("scale_stage") == "true" && p.text("scaling") == "block")
    return refuse("scale_stage=true stages row or tensor scales in shared memory at a tile's start; this problem has "
                  "scaling=block, whose scales the producer stages per k block already: leave scale_stage at auto or "
                  "false, or set scaling=row or tensor");
  if (c.text("scale_stage") == "true" && c.text("scale_early") == "true")
    return refuse("scale_stage=true and scale_early=true both move the tensor scales' loads out of the epilogue: set "
                  "one of them");
  if (c.text("scale_early") == "true" && p.text("scaling") != "tensor")
    return refuse("scale_early=true loads the two tensor scales at the kernel's start; this problem has scaling=" +
                  p.text("scaling") + ", whose scales are per row or block: leave scale_early at auto or false, or "
                  "set scaling=tensor");
  if (c.text("early_loads") == "true" && p.text("scaling") == "block")
    return refuse("early_loads=true issues the first stages' TMA loads of A and B from one thread before the "
                  "__syncthreads; this problem has scaling=block, whose stages also take the producer warp's scale "
                  "copies: set early_loads=false, or scaling=tensor or row");
  const GemmFp8Config cfg = fp8_config(p, c);
  TL_RETURN_IF_ERROR(check_kmajor(p, c, cfg));
  const GemmFp8Plan plan = make_plan(cfg);
  if (cfg.c_split > 1 && !cfg.tma_store)
    return refuse("c_split=" + c.text("c_split") + " splits the TMA-store epilogue's staging tile, but this run stores "
                  "C directly (tma_store off): set c_split=1");
  if (cfg.block_N / cfg.c_split % plan.box_C.inner != 0)
    return refuse("c_split=" + c.text("c_split") + " leaves parts of " + std::to_string(cfg.block_N / cfg.c_split) +
                  " columns, but the epilogue stores whole sub-tiles of " + std::to_string(plan.box_C.inner) + " " +
                  p.text("out_dtype") + " columns (128 bytes) and block_N=" + std::to_string(cfg.block_N) +
                  " is in effect: use c_split=1 or block_N=256");
  return check_smem(plan.bytes, limits, kmajor_smem_use(p, c, cfg, plan), kmajor_smem_fix(cfg));
}

// One entry of the K-major GEMMs (gemm.fp8, gemm.grouped) in float64 over the inputs as stored: the sum over k of
// A[a_row, k] B[b_row, k] times the scales of `mode`: per 128-k block scale_A[a_row, kb] scale_B[sb_block, kb]
// (block; sa_mn_rows > 0: scale_A M-major, [K/128, sa_mn_rows], scale_A[kb, a_row]), or scale_A[a_row]
// scale_B[sb_col] (row), or scale_A[0] scale_B[0] (tensor), or none.
double kmajor_entry(const ReferenceInputs& in, gemm_detail::Fp8Scaling mode, std::int64_t K, std::int64_t a_row,
                    std::int64_t b_row, std::int64_t sb_block, std::int64_t sb_col, std::int64_t sa_mn_rows = 0) {
  const HostTensor &A = in.tensor("A"), &B = in.tensor("B");
  const HostTensor* SA = mode == gemm_detail::kScaleNone ? nullptr : &in.tensor("scale_A");
  const HostTensor* SB = mode == gemm_detail::kScaleNone ? nullptr : &in.tensor("scale_B");
  const std::int64_t KB = fp8_blocks(K);
  double total = 0;
  for (std::int64_t kb = 0; kb < KB; ++kb) {
    double s = 0;
    for (std::int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) s += A.at(a_row * K + k) * B.at(b_row * K + k);
    if (mode == gemm_detail::kScaleBlock)
      s *= SA->at(sa_mn_rows > 0 ? kb * sa_mn_rows + a_row : a_row * KB + kb) * SB->at(sb_block * KB + kb);
    total += s;
  }
  if (mode == gemm_detail::kScaleRow) total *= SA->at(a_row) * SB->at(sb_col);
  if (mode == gemm_detail::kScaleTensor) total *= SA->at(0) * SB->at(0);
  return total;
}

Result<std::vector<double>> fp8_reference(const Values& p, const ReferenceInputs& in, const std::string&,
                                          const std::vector<std::int64_t>& idx) {
  const std::int64_t N = p.integer("N"), K = p.integer("K");
  std::vector<double> out;
  out.reserve(idx.size());
  for (auto i : idx) {
    const std::int64_t r = i / N, c = i % N;
    out.push_back(kmajor_entry(in, fp8_scaling(p), K, r, c, c / 128, c, fp8_scale_a_mn(p) ? p.integer("M") : 0));
  }
  return out;
}

Tolerance fp8_tolerance(const Values& p) {
  const double K = static_cast<double>(p.integer("K"));
  return p.text("out_dtype") == "f32" ? Tolerance{1e-3, 1e-3 * K} : Tolerance{1e-2, 0.1 * std::sqrt(K)};
}

// Timeline marks one warp of the K-major main loop records at most: per k block the producer's two regions (begin +
// end each), or a consumer's wait, wgmma and promote regions and its release instant; plus an epilogue per tile and
// the prologue and exit regions (4 marks, within the 64 spare); k blocks = the tiles of the busiest CTA x the k
// blocks of one tile.
std::uint32_t kmajor_probe_capacity(std::int64_t tiles, int sms, std::int64_t k_blocks) {
  const auto grid = std::max<std::int64_t>(std::min<std::int64_t>(tiles, std::max(sms, 1)), 1);
  const auto per_block = (tiles + grid - 1) / grid;
  return static_cast<std::uint32_t>(7 * per_block * k_blocks + 2 * per_block + 64);
}

// The K-major main loop's tensor maps and scales, in its kernels' parameter order: tma_A, tma_B, tma_C over the
// tensors A, B and C (boxes (block_K, block_M), (block_K, block_N) and the staging sub-tile), then scale_A and
// scale_B (random in [0.5, 2), so that a scale taken from the wrong row, column or block shows). Without tma_store
// the kernel never reads tma_C (C's rows need not be 16-byte multiples): a valid map of A takes its place. A and B
// are reached only through their maps.
std::vector<ArgSpec> kmajor_maps_and_scales(const GemmFp8Plan& plan, bool tma_store, const std::vector<std::int64_t>& sa,
                                            const std::vector<std::int64_t>& sb) {
  const int swizzle = swizzle_bytes(SmemSwizzle::b128);
  auto box = [](GemmFp8Plan::Box x) { return std::vector<std::int64_t>{x.inner, x.outer}; };
  return {ArgSpec::tensor_map("tma_A", "A", box(plan.box_A), swizzle),
          ArgSpec::tensor_map("tma_B", "B", box(plan.box_B), swizzle),
          tma_store ? ArgSpec::tensor_map("tma_C", "C", box(plan.box_C), plan.c_swizzle)
                    : ArgSpec::tensor_map("tma_C", "A", box(plan.box_A), swizzle),
          ArgSpec::tensor("scale_A", DType::f32, sa, ArgRole::in, {.lo = 0.5, .hi = 2, .seed = 3}),
          ArgSpec::tensor("scale_B", DType::f32, sb, ArgRole::in, {.lo = 0.5, .hi = 2, .seed = 4})};
}

// The K-major main loop's layouts: its tiles as TMA writes them and wgmma reads them, a consumer's accumulator and
// one chain's partial sums when it promotes (the wgmma D atoms: k32 for e4m3, k16 for bf16), and the C staging tile
// of one consumer warpgroup.
template <class Config>
std::vector<LayoutInfo> kmajor_layouts(const Config& cfg, const std::string& out) {
  const GemmFp8Plan plan = make_kmajor_plan(cfg);
  const bool e4m3 = cfg.in_bytes() == 1;
  const std::string in = e4m3 ? "e4m3" : "bf16";
  std::vector<LayoutInfo> l = {{"smem_A", memory_spec(plan.smem_A, in)}, {"smem_B", memory_spec(plan.smem_B, in)}};
  auto fragment = [&](const char* name, const Fragment& f, int n) {
    if (auto spec = fragment_spec(f, "wgmma.m64n" + std::to_string(n) + (e4m3 ? "k32" : "k16") + ".f32.C"))
      l.push_back({name, *spec});
  };
  fragment("wgmma_C", plan.acc, cfg.block_N);
  if (e4m3 && !cfg.fast_accum) fragment("wgmma_part", plan.chunk, cfg.wgmma_N);
  if (cfg.tma_store && plan.c_swizzle != 0) l.push_back({"smem_C", memory_spec(plan.smem_C, out)});
  return l;
}

// Problems of `tilelab test`: M and N that are no tile multiple, every scaling and output type (the first with both
// left at their defaults), K with a partial last k block (208, 144, 400: 80, 16 and 16 of its 128), N across three
// 128-column blocks of B (300). Block scales at K 400 and 512 have 4 k blocks (scale_tma's TMA boxes), at 144 two
// (scale_tma falls back to cp.async). scale_A M-major (scale_a_layout=mn): M 2116 on enough 128 x 256 tiles for
// scale_tma's auto (its TMA box of the tile's rows; one consumer, the next config, cp.async), M 257 (not a multiple
// of 4: cp.async).
std::vector<std::map<std::string, std::string>> gemm_fp8_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  auto mnk = [](const char* m, const char* n, const char* k, const char* scaling, const char* out = "bf16") {
    return KV{{"M", m}, {"N", n}, {"K", k}, {"scaling", scaling}, {"out_dtype", out}};
  };
  auto mn = [](KV p) {
    p["scale_a_layout"] = "mn";
    return p;
  };
  std::vector<KV> s = {{{"M", "257"}, {"N", "130"}, {"K", "256"}}, mnk("257", "130", "256", "row"),
                       mnk("257", "130", "400", "block"),  mnk("256", "256", "512", "block", "f32"),
                       mnk("200", "136", "208", "row", "f32"), mnk("129", "300", "144", "block"),
                       mn(mnk("2116", "2312", "512", "block")), mn(mnk("257", "130", "400", "block", "f32"))};
  if (full) {
    for (const char* mode : {"tensor", "row", "block"})
      s.insert(s.end(), {mnk("1", "1", "16", mode), mnk("513", "511", "1008", mode), mnk("513", "520", "1008", mode, "f32")});
    // More tiles than a persistent grid has CTAs: each CTA walks several, both dimensions end in partial tiles.
    s.insert(s.end(), {mnk("2113", "2312", "272", "block"), mnk("2113", "2312", "272", "tensor", "f32")});
    s.insert(s.end(), {mn(mnk("1", "1", "16", "block")), mn(mnk("516", "511", "1008", "block")),
                       mn(mnk("129", "300", "144", "block"))});
  }
  return s;
}

KernelSpec gemm_fp8_spec() {
  KernelSpec k;
  k.name = "gemm.fp8";
  k.family = "gemm";
  k.tensor_cores = true;
  k.summary = "Hopper FP8 GEMM: e4m3 wgmma k32, promotion into f32 per 128-k block, scales per tensor/row/128-block, "
              "TMA 128B swizzle, persistent (C = sA*A * (sB*B)^T)";
  k.source = "gemm/gemm_fp8.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = gemm_fp8_problem();
  k.config = {{ParamSpec::one_of("block_M", 0, {0, 64, 128},
                                 "rows of C per tile: 64 per consumer warpgroup; 0 = auto: 64 (with 64x64 tiles, row "
                                 "scales staged) where M <= 64 with tensor or row scales and block_N, wgmma_N, "
                                 "fast_accum, overlap and a_regs left alone (1.3-1.5x the 128-row tiles on an H200), "
                                 "else 128"),
               ParamSpec::one_of("block_N", 0, {0, 64, 112, 128, 192, 256},
                                 "columns of C per tile; 0 = auto: 192 where 128x192 tiles (one chain a consumer) "
                                 "take fewer tile-clocks on 132 SMs than 128x256 (tensor and row scales, two "
                                 "consumers), else 256; where those fill under one wave (small M), 64 or 128 if "
                                 "they take fewer; 112 (opt-in, tensor and row scales): cuBLASLt's 64x112 tile of "
                                 "small M with block_M=64 (M 128, N 7168: 128 CTAs on 132 SMs against 112; on an H200 0.96-0.98x "
                                 "the default there per-tensor, 0.90-0.98x with row scales: docs/perf.md)"),
               ParamSpec::one_of("wgmma_N", 0, {0, 64, 112, 128, 192, 256},
                                 "columns of one wgmma chain (m64nNk32): block_N / wgmma_N chains per k block, each "
                                 "promoted on its own, so the partial sums take wgmma_N/2 registers; 0 = auto: "
                                 "block_N with fast_accum or block_N=192, else min(block_N, 128)"),
               ParamSpec::integer("num_stages", 0, 0, 8,
                                  "TMA pipeline depth (block_K = 128 per stage), 2-8; 0 = auto: as many as fit the "
                                  "shared memory up to 8 beside tiles under 192 columns, 4 beside 192 columns on "
                                  "grids of at most 32 waves, else 3")}};
  for (ParamSpec& p : hopper_schedule_params()) k.config.params.push_back(std::move(p));
  k.config.params.push_back(ParamSpec::boolean(
      "fast_accum", false, "no promotion: the tensor cores accumulate all of K (cuBLASLt's FAST_ACCUM; not with block scales)"));
  k.config.params.push_back(ParamSpec::boolean(
      "overlap", false, "two wgmma chains in flight: chain j+1 runs while chain j is promoted (two partial-sum "
                        "buffers; block_N / wgmma_N even)"));
  k.config.params.push_back(ParamSpec::enumeration(
      "a_regs", "auto", {"auto", "true", "false"},
      "A's k block loaded into registers (ldmatrix) once per k block: the chains' wgmma read only B from shared "
      "memory (not with fast_accum; with overlap the chains overlap within each k block only; auto: for block scales "
      "with block_M=128, overlap off)"));
  // Off: on 128 x 64 tiles (block scales, M = 128) it measured +3.4-3.6% in one H100 call and 0.5-1% slower in five
  // alternated rounds of another; on 128 x 256 tiles 3.8-4.8% slower (docs/perf.md, 2026-11-26).
  k.config.params.push_back(ParamSpec::boolean(
      "ping_pong", false,
      "the two consumer warpgroups issue their wgmma chains in turns (named barriers), so that one promotes while "
      "the other's chain runs (block_M=128, not with overlap or fast_accum)"));
  k.config.params.push_back(ParamSpec::enumeration(
      "scale_tma", "auto", {"auto", "true", "false"},
      "block scales loaded by TMA (boxes of 4 k blocks of scale_A's tile rows and scale_B's blocks, beside A and B) "
      "instead of the producer warp's 4-byte cp.async; needs ceil(K/128) a multiple of 4 (16-byte rows; an M-major "
      "scale_A also M a multiple of 4); true is refused elsewhere and for tensor and row scales; auto: on for "
      "block_M=128 tiles of 192+ columns where it can run (a_regs then auto-off), else cp.async"));
  k.config.params.push_back(ParamSpec::enumeration(
      "scale_stage", "auto", {"auto", "true", "false"},
      "row scaling: each consumer copies the tile's scale_B columns and its rows' scale_A into shared memory with "
      "cp.async at the tile's start, and the epilogue reads them there (not global loads after the last promotion); "
      "auto: on for block_M=128 tiles without fast_accum and for the 64x64 tiles of block_M's auto at M <= 64; "
      "tensor scaling (not with scale_early=true): each consumer thread copies the two scales into its own slot the "
      "same way, auto on for block_M=128 tiles other than 128x192 without fast_accum; refused for block scales"));
  k.config.params.push_back(kmajor_uniform_desc_param());
  k.config.params.push_back(ParamSpec::enumeration(
      "scale_early", "auto", {"auto", "true", "false"},
      "tensor scaling: each consumer thread loads scale_A[0] and scale_B[0] at the kernel's start into a register, "
      "instead of the epilogue's two global loads after the last k block (from HBM, each tile); true is refused for "
      "row and block scales; auto: on for the 64x64 tiles of block_M's auto at M <= 64 (with prefetch_maps: on an H200 "
      "1.03-1.04x there), else off (0.93-0.96x at M 128)"));
  k.config.params.push_back(ParamSpec::enumeration(
      "prefetch_maps", "auto", {"auto", "true", "false"},
      "the TMA descriptors (A, B, the block scales' with scale_tma, and C with tma_store) prefetched by the loading "
      "thread before the barriers' init, instead of A's and B's after it and C's by the first bulk store after the "
      "last k block; auto: on with scale_early's auto (per-tensor, the 64x64 tiles at M <= 64), else off (on an H200 "
      "within 1.7% either way elsewhere)"));
  // docs/perf.md, 2026-11-28, fp8m128t (the M 128 per-tensor timeline and these switches timed A B B A): early_loads
  // won at one-wave grids (auto there); two other switches timed with it were taken out: B's boxes past the ring
  // prefetched into the L2 at the start (prefetch_b, 0.79-0.83x) and the last store wait for its reads only
  // (exit_read, even: 0.985-1.005x).
  k.config.params.push_back(ParamSpec::enumeration(
      "early_loads", "auto", {"auto", "true", "false"},
      "the loading thread issues its first tile's first num_stages TMA loads of A and B right after the barriers' "
      "init, before the __syncthreads and the producer's register hand-over (tensor and row scales; true is refused "
      "for block scales); auto: on for tiles of at most 128 columns where the grid is one wave (tiles <= 132 SMs: "
      "M <= 256 at N 7168; on an H200 1.005-1.033x there), else off (even at 4096x7168x2048)"));
  k.config.params.push_back(ParamSpec::one_of(
      "c_split", 1, {1, 2, 4},
      "TMA-store epilogue: C staged and stored in this many column parts through one part's buffer, so that a "
      "deeper pipeline fits (num_stages=4 beside 128x256 tiles: c_split=2, with block scales 4)"));
  k.can_implement = check_fp8;
  k.test_problems = gemm_fp8_test_problems;
  // Combinations the one-parameter variations miss: whole-tile chains with fast accumulation, small tiles, direct
  // stores with a deeper pipeline, overlapped promotion (four chains per k block; two, on one consumer), A from
  // registers (two consumers; one, with 64 x 128 tiles; with overlapped promotion), the consumers in turns with A from
  // shared memory, the staging tile in parts beside a fourth stage, 192-column tiles with one chain, row scales
  // staged in shared memory with one consumer and direct stores, the per-thread descriptors (uniform_desc's
  // auto is on at the default tiles) and the uniform ones with one 192-column chain, the tensor scales loaded and the
  // tensor maps fetched first (scale_early and prefetch_maps on: their auto is off at the test problems' M > 64).
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"wgmma_N", "256"}, {"fast_accum", "true"}},
        {{"block_M", "64"}, {"block_N", "64"}, {"wgmma_N", "64"}, {"raster", "n"}},
        {{"block_N", "128"}, {"wgmma_N", "64"}, {"num_stages", "6"}},
        {{"tma_store", "false"}, {"num_stages", "4"}},
        {{"wgmma_N", "64"}, {"overlap", "true"}},
        {{"block_M", "64"}, {"block_N", "128"}, {"wgmma_N", "64"}, {"overlap", "true"}, {"num_stages", "5"}},
        {{"a_regs", "true"}},
        {{"wgmma_N", "64"}, {"overlap", "true"}, {"a_regs", "true"}},
        {{"ping_pong", "true"}, {"a_regs", "false"}},
        {{"block_M", "64"}, {"block_N", "128"}, {"a_regs", "true"}, {"num_stages", "5"}},
        {{"c_split", "2"}, {"num_stages", "4"}},
        {{"c_split", "4"}, {"num_stages", "4"}},
        {{"block_N", "192"}, {"wgmma_N", "192"}},
        {{"scale_tma", "true"}},
        {{"scale_tma", "true"}, {"a_regs", "false"}, {"block_N", "192"}, {"wgmma_N", "192"}},
        {{"scale_stage", "true"}, {"block_M", "64"}, {"block_N", "128"}, {"tma_store", "false"}},
        {{"uniform_desc", "false"}},
        {{"block_N", "192"}, {"wgmma_N", "192"}, {"uniform_desc", "true"}},
        {{"scale_early", "true"}, {"prefetch_maps", "true"}},
        {{"early_loads", "true"}}};
  };
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) * static_cast<double>(p.integer("K"));
  };
  k.min_bytes = [](const Values& p) {
    const double M = static_cast<double>(p.integer("M")), N = static_cast<double>(p.integer("N")),
                 K = static_cast<double>(p.integer("K"));
    const auto [sa, sb] = fp8_scale_shapes(p);
    double scales = 0;
    for (const auto* shape : {&sa, &sb}) {
      double n = 1;
      for (auto d : *shape) n *= static_cast<double>(d);
      scales += 4 * n;
    }
    return M * K + N * K + scales + M * N * (p.text("out_dtype") == "f32" ? 4.0 : 2.0);
  };
  k.reference = fp8_reference;
  // cuBLASLt's FP8 matmul on the same buffers, with the same scales (per tensor, outer vectors, 1 x 128 by 128 x 128
  // blocks), output type and accumulation: it promotes as fast_accum=false does, and fast_accum=true sets its
  // FAST_ACCUM (no promotion), so each mode is compared with its like.
  k.baseline = [](const Values& p, const Values& c) -> std::optional<BaselineSpec> {
    BaselineSpec b;
    b.kind = "cublaslt_fp8";
    b.M = static_cast<int>(p.integer("M"));
    b.N = static_cast<int>(p.integer("N"));
    b.K = static_cast<int>(p.integer("K"));
    b.in = DType::e4m3;
    b.out = out_type(p);
    b.scaling = p.text("scaling");
    b.scale_a_mn = b.scaling == "block" && fp8_scale_a_mn(p);  // cuBLASLt reads them so: no copy
    b.fast_accum = c.boolean("fast_accum");
    return b;
  };
  // Entries are sums of K products of e4m3 values in [-2, 2) (variance 4/3 each) times scales in [0.5, 2): a bf16 C
  // is rounded to 2^-9 of entries up to about 24 sqrt(K). An f32 C carries the tensor cores' own rounding of the
  // sums they accumulate, which grows with how many they add: measured on the H100 at K = 1008, relative 1.1e-4 and
  // max 0.084 promoting every 128 k, 4.6e-4 and 0.48 with fast_accum (all of K). The bounds leave 2x to the latter,
  // and stay far below what a scale from the wrong row, column or block does (a factor of up to 16 on an entry).
  k.tolerance = [](const Values& p, DType) { return fp8_tolerance(p); };
  k.probes = gemm_fp8_probe_names();
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    return kmajor_probe_capacity(fp8_tiles(p, c), l.sm_count, fp8_blocks(p.integer("K")));
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(fp8_config(p, c)); };
  // Persistent: one CTA per SM at most, capped at the tile count.
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>(std::min<std::int64_t>(fp8_tiles(p, c), std::max(l.sm_count, 1)));
    g.persistent = true;
    g.block.x = static_cast<std::uint32_t>(fp8_config(p, c).threads());
    g.dynamic_smem = static_cast<std::uint32_t>(fp8_plan(p, c).bytes);
    return g;
  };
  // Kernel signature: (tma_A, tma_B, tma_C, scale_A, scale_B, tma_SA, tma_SB, C, M, N, K); A and B are reached only
  // through their tensor maps, boxes (128 k, block_M rows) and (128 k, block_N rows); tma_SA and tma_SB are the
  // block scales' maps with scale_tma (boxes (4 k blocks, block_M rows), M-major (block_M rows, 1 k block), and (4,
  // the tile's blocks of B), no swizzle),
  // else never read (maps of A take their place). Inputs are random e4m3 in [-2, 2) and
  // random scales in [0.5, 2), so that a scale taken from the wrong row, column or block shows.
  k.args = [](const Values& p, const Values& c, const DeviceLimits&) {
    const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
    const GemmFp8Plan plan = fp8_plan(p, c);
    const auto [sa, sb] = fp8_scale_shapes(p);
    std::vector<ArgSpec> args = {ArgSpec::tensor("A", DType::e4m3, {M, K}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 1}),
                                 ArgSpec::tensor("B", DType::e4m3, {N, K}, ArgRole::in, {.lo = -2, .hi = 2, .seed = 2})};
    args[0].is_param = args[1].is_param = false;
    for (auto& a : kmajor_maps_and_scales(plan, tma_store_on(p, c), sa, sb)) args.push_back(std::move(a));
    const int swizzle = swizzle_bytes(SmemSwizzle::b128);
    auto box = [](GemmFp8Plan::Box x) { return std::vector<std::int64_t>{x.inner, x.outer}; };
    if (fp8_scale_tma(p, c)) {
      args.push_back(ArgSpec::tensor_map("tma_SA", "scale_A", box(plan.box_SA), 0));
      args.push_back(ArgSpec::tensor_map("tma_SB", "scale_B", box(plan.box_SB), 0));
    } else {
      args.push_back(ArgSpec::tensor_map("tma_SA", "A", box(plan.box_A), swizzle));
      args.push_back(ArgSpec::tensor_map("tma_SB", "A", box(plan.box_A), swizzle));
    }
    args.push_back(ArgSpec::tensor("C", out_type(p), {M, N}, ArgRole::out));
    for (auto& s : sizes(p)) args.push_back(std::move(s));
    return args;
  };
  // The plan's tiles as TMA writes them and wgmma reads them, a consumer's accumulator and one chain's partial sums
  // (the wgmma D atoms), and the C staging tile of one consumer warpgroup.
  k.layouts = [](const Values& p, const Values& c) { return kmajor_layouts(fp8_config(p, c), p.text("out_dtype")); };
  return k;
}

// [SECTION] gemm.grouped

// G groups (a MoE layer's experts), group g: C_g[M_g, N] = (scale_A A_g[M_g, K]) (scale_B B_g[N, K])^T, B [G, N, K],
// in DeepGEMM's two layouts (gemm_grouped.cuh): contiguous (the groups' rows one after another, offsets) or masked (a
// slot of M rows per group, masked_m[g] of them valid). bf16 or e4m3 inputs, bf16 or f32 C.
Schema gemm_grouped_problem() {
  return {{ParamSpec::integer("G", 8, 1, 4096, "groups (experts), each with its own B [N, K]"),
           ParamSpec::integer("M", 2048, 1, 1 << 20,
                              "rows per group: contiguous, each group's M_g (uneven: their mean); masked, M_max, the "
                              "rows of each group's slot (uneven: masked_m[g] in [0, M])"),
           ParamSpec::integer("N", 4096, 1, 1 << 20, "columns of C, rows of each B_g (B is stored [G, N, K])"),
           ParamSpec::integer("K", 7168, 1, 1 << 20, "the reduction; 16-byte rows: a multiple of 8 (bf16) or 16 (e4m3)"),
           ParamSpec::enumeration("layout", "contiguous", {"contiguous", "masked"},
                                  "contiguous: A [sum M_g, K], the groups' rows one after another (offsets); masked: A "
                                  "[G, M, K], masked_m[g] rows of group g valid, the rest neither computed nor written"),
           ParamSpec::boolean("uneven", false,
                              "group sizes drawn per group (seeded): contiguous M_g in [0, 2M], masked masked_m[g] in "
                              "[0, M]; false: M each"),
           ParamSpec::integer("empty", 0, 0, 4096, "groups with no rows, spread evenly over the G"),
           ParamSpec::enumeration("dtype", "bf16", {"bf16", "e4m3"}, "type of A and B"),
           ParamSpec::enumeration("scaling", "auto", {"auto", "none", "tensor", "row", "block"},
                                  "e4m3 scales (gemm.fp8's): tensor, row (scale_A per row, scale_B [G, N]), block "
                                  "(scale_A [rows, K/128], scale_B [G, N/128, K/128]); none; auto = block for e4m3, "
                                  "none for bf16"),
           ParamSpec::enumeration("out_dtype", "bf16", {"bf16", "f32"}, "type of C; accumulation is fp32 always")}};
}

bool grouped_masked(const Values& p) { return p.text("layout") == "masked"; }
bool grouped_e4m3(const Values& p) { return p.text("dtype") == "e4m3"; }

gemm_detail::Fp8Scaling grouped_scaling(const Values& p) {
  const std::string s = p.text("scaling");
  if (s == "auto") return grouped_e4m3(p) ? gemm_detail::kScaleBlock : gemm_detail::kScaleNone;
  return s == "none" ? gemm_detail::kScaleNone : fp8_scaling(p);
}

// The groups' rows, from the problem: M each, or with `uneven` drawn per group (a fixed seed: the same groups on
// every machine) in [0, 2M] (contiguous: mean M) or [0, M] (masked); the `empty` groups, spread evenly (g is one when
// floor((g + 1) empty / G) > floor(g empty / G)), have none. Rows of A and C that are no group's: masked, those past
// masked_m; contiguous, one row when every group is empty (a launch with nothing to do still has tensors).
struct GroupedRows {
  std::vector<std::int32_t> rows;     // M_g, or masked_m[g]
  std::vector<std::int32_t> offsets;  // contiguous: the G + 1 starts (the kernel's `offsets`); masked: none
  std::int64_t total = 0;             // rows of A and C: contiguous, their sum (at least 1); masked, G M
  std::int64_t valid = 0;             // rows computed: the sum of rows
  std::int64_t groups_with_rows = 0;
};
GroupedRows grouped_rows(const Values& p) {
  const std::int64_t G = p.integer("G"), M = p.integer("M"), empty = std::min(p.integer("empty"), G);
  const bool masked = grouped_masked(p);
  std::mt19937 draw(0x6d6f65);
  GroupedRows g;
  for (std::int64_t i = 0; i < G; ++i) {
    std::int64_t m = M;
    if (p.boolean("uneven")) m = draw() % static_cast<std::uint32_t>((masked ? M : 2 * M) + 1);
    if ((i + 1) * empty / G > i * empty / G) m = 0;
    g.rows.push_back(static_cast<std::int32_t>(m));
    g.valid += m;
    g.groups_with_rows += m > 0;
  }
  if (masked) {
    g.total = G * M;
  } else {
    g.offsets.push_back(0);
    for (auto m : g.rows) g.offsets.push_back(g.offsets.back() + m);
    g.total = std::max<std::int64_t>(g.valid, 1);
  }
  return g;
}

// The row tiles of every group in order: (group << 16) | m tile, the host schedule's list.
std::vector<std::int32_t> grouped_row_tiles(const GroupedRows& g, std::int64_t block_M) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < g.rows.size(); ++i)
    for (std::int64_t m = 0; m < (g.rows[i] + block_M - 1) / block_M; ++m)
      out.push_back(grouped_row_tile(static_cast<int>(i), static_cast<int>(m)));
  return out;
}
std::int64_t grouped_tiles(const Values& p, const Values& c) {
  const auto tiles_n = (p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N");
  return static_cast<std::int64_t>(grouped_row_tiles(grouped_rows(p), c.integer("block_M")).size()) * tiles_n;
}

GemmGroupedConfig grouped_config(const Values& p, const Values& c) {
  auto i = [&](const char* name) { return static_cast<int>(c.integer(name)); };
  const bool e4m3 = grouped_e4m3(p);
  GemmGroupedConfig cfg{.block_M = i("block_M"),
          .block_N = i("block_N"),
          .block_K = e4m3 ? 128 : 64,
          .wgmma_N = e4m3 ? i("wgmma_N") : i("block_N"),  // bf16 accumulates in place: one chain over the tile
          .num_stages = i("num_stages"),
          .panel = i("panel"),
          .raster_n = c.text("raster") == "n",
          .tma_store = tma_store_on(p, c),
          .fast_accum = e4m3 && c.boolean("fast_accum"),
          .scaling = grouped_scaling(p),
          .out_dtype = p.text("out_dtype") == "f32" ? gemm_detail::kOutF32 : gemm_detail::kOutBf16,
          .e4m3 = e4m3,
          .masked = grouped_masked(p),
          .host_schedule = c.text("schedule") == "host"};
  cfg.uniform_desc = kmajor_uniform_desc_on(c, cfg);  // gemm.fp8's rule, on the resolved tiles
  return cfg;
}

// The scales' shapes: gemm.fp8's, with scale_B per group.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> grouped_scale_shapes(const Values& p,
                                                                                     std::int64_t rows) {
  const auto G = p.integer("G"), N = p.integer("N"), K = p.integer("K");
  switch (grouped_scaling(p)) {
    case gemm_detail::kScaleBlock: return {{rows, fp8_blocks(K)}, {G, fp8_blocks(N), fp8_blocks(K)}};
    case gemm_detail::kScaleRow: return {{rows}, {G, N}};
    default: return {{1}, {1}};  // tensor: one each; none: unread
  }
}

Status check_grouped(const Values& p, const Values& c, const DeviceLimits& limits) {
  const bool e4m3 = grouped_e4m3(p);
  const auto unit = e4m3 ? 16 : 8;
  if (p.integer("K") % unit != 0)
    return refuse("K=" + p.text("K") + " is not a multiple of " + std::to_string(unit) + ": TMA copies the " +
                  p.text("dtype") + " rows of A and B in 16-byte units; pad K (zeros add nothing)");
  if (p.integer("empty") > p.integer("G"))
    return refuse("empty=" + p.text("empty") + " is more than the G=" + p.text("G") + " groups: use empty <= G");
  const GroupedRows rows = grouped_rows(p);
  const std::string scaling = p.text("scaling");
  if (!e4m3 && scaling != "auto" && scaling != "none")
    return refuse("scaling=" + scaling + " scales e4m3 inputs; dtype=bf16 has none: set scaling=none (or auto), or "
                  "dtype=e4m3");
  if (rows.total >= (std::int64_t{1} << 31))
    return refuse("the groups hold " + std::to_string(rows.total) + " rows, more than the 2^31 a TMA coordinate "
                  "reaches: lower G or M");
  const GemmGroupedConfig cfg = grouped_config(p, c);
  TL_RETURN_IF_ERROR(check_kmajor(p, c, cfg));
  std::string what = kmajor_smem_use(p, c, cfg, make_plan(cfg)), fix = kmajor_smem_fix(cfg);
  if (!cfg.host_schedule) {
    what += " and the group table (" + std::to_string(4 * (p.integer("G") + 1)) + " bytes for G=" + p.text("G") + ")";
    fix += ", or schedule=host (no group table)";
  }
  return check_smem(grouped_smem_bytes(cfg, static_cast<int>(p.integer("G"))), limits, what, fix);
}

// float64 per entry: its group's B rows and scales (kmajor_entry). A row of no group (masked past masked_m[g], or
// the one row of a contiguous launch whose groups are all empty) keeps what C held before the launch (C is an inout
// tensor there, filled at random): the kernel must leave it alone.
Result<std::vector<double>> grouped_reference(const Values& p, const ReferenceInputs& in, const std::string&,
                                              const std::vector<std::int64_t>& idx) {
  const GroupedRows g = grouped_rows(p);
  const std::int64_t N = p.integer("N"), K = p.integer("K"), M = p.integer("M"), NB = fp8_blocks(N);
  const bool masked = grouped_masked(p);
  const gemm_detail::Fp8Scaling mode = grouped_scaling(p);
  std::vector<double> out;
  out.reserve(idx.size());
  for (auto i : idx) {
    const std::int64_t r = i / N, c = i % N;
    // Contiguous: the last group starting at or before r (empty groups start where the next one does).
    const std::int64_t grp = masked ? r / M
                                    : std::upper_bound(g.offsets.begin(), g.offsets.end(), r) - g.offsets.begin() - 1;
    if (masked ? r % M >= g.rows[static_cast<std::size_t>(grp)] : r >= g.offsets.back()) {
      out.push_back(in.tensor("C").at(i));
      continue;
    }
    out.push_back(kmajor_entry(in, mode, K, r, grp * N + c, grp * NB + c / 128, grp * N + c));
  }
  return out;
}

// Problems of `tilelab test` (the runner adds each dtype; those with scales only run for e4m3): group sizes that are
// no tile multiple (uneven), empty groups, one group, every row masked (and, --full, every group empty), both
// layouts, both outputs, N with and without 16-byte rows (the TMA-store epilogue on and off), K with a partial last k
// block (144, 272 for e4m3's 128).
std::vector<std::map<std::string, std::string>> gemm_grouped_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  auto group = [](const char* g, const char* m, const char* n, const char* k, KV extra = {}) {
    KV kv = {{"G", g}, {"M", m}, {"N", n}, {"K", k}};
    kv.insert(extra.begin(), extra.end());
    return kv;
  };
  const KV masked = {{"layout", "masked"}};
  std::vector<KV> s = {group("4", "100", "136", "144", {{"uneven", "true"}, {"empty", "1"}}),
                       group("3", "200", "130", "64", {{"layout", "masked"}, {"uneven", "true"}}),
                       group("1", "257", "256", "256"),
                       group("4", "64", "128", "64", {{"layout", "masked"}, {"empty", "4"}}),
                       group("5", "130", "264", "272", {{"layout", "masked"}, {"empty", "2"}, {"out_dtype", "f32"}}),
                       group("3", "150", "300", "272", {{"uneven", "true"}, {"scaling", "row"}})};
  if (full) {
    s.insert(s.end(),
             {group("64", "128", "256", "128", {{"uneven", "true"}, {"empty", "8"}}),
              group("16", "300", "1000", "272", {{"uneven", "true"}}),
              group("8", "333", "520", "1008", {{"layout", "masked"}, {"uneven", "true"}, {"out_dtype", "f32"}}),
              group("2", "1", "8", "16"), group("3", "50", "64", "64", {{"empty", "3"}}),
              group("3", "150", "300", "272", {{"uneven", "true"}, {"scaling", "tensor"}}),
              group("4", "96", "264", "208", {{"layout", "masked"}, {"scaling", "row"}, {"out_dtype", "f32"}}),
              // More tiles than a persistent grid has CTAs: each CTA walks several, across groups.
              group("12", "700", "2312", "208", {{"uneven", "true"}, {"empty", "3"}})});
  }
  return s;
}

KernelSpec gemm_grouped_spec() {
  KernelSpec k;
  k.name = "gemm.grouped";
  k.family = "gemm";
  k.tensor_cores = true;
  k.summary = "Hopper grouped GEMM for MoE (DeepGEMM's contiguous and masked layouts): G groups, each its own B, one "
              "persistent launch over all groups' tiles; bf16 or e4m3 (gemm.fp8's promotion and scales)";
  k.source = "gemm/gemm_grouped.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = gemm_grouped_problem();
  k.config = {{ParamSpec::one_of("block_M", 128, {64, 128}, "rows of C per tile: 64 per consumer warpgroup"),
               ParamSpec::one_of("block_N", 256, {64, 128, 256}, "columns of C per tile"),
               ParamSpec::one_of("wgmma_N", 128, {64, 128, 256},
                                 "e4m3: columns of one wgmma chain, each promoted on its own (bf16: block_N, one "
                                 "chain accumulating in place)"),
               ParamSpec::integer("num_stages", 3, 2, 8, "TMA pipeline depth (block_K = 128 bytes of k per stage)")}};
  // Panels of 8 row tiles: at the anchors (N 4096, K 7168) 4% faster than 16 at G 32 x 512 rows and 3% at G 64 x 128,
  // 0.4% slower at G 8 x 2048 (docs/perf.md).
  for (ParamSpec& p : hopper_schedule_params()) {
    if (p.name == "panel") p = ParamSpec::one_of("panel", 8, {1, 2, 4, 8, 16, 32}, p.help);
    k.config.params.push_back(std::move(p));
  }
  k.config.params.push_back(ParamSpec::boolean(
      "fast_accum", false, "e4m3: no promotion, the tensor cores accumulate all of K (not with block scales)"));
  k.config.params.push_back(ParamSpec::enumeration(
      "schedule", "device", {"device", "host"},
      "where the work list of (group, m tile) row tiles comes from: device = each CTA counts them from the group "
      "sizes into shared memory; host = a table the host builds"));
  k.config.params.push_back(kmajor_uniform_desc_param());
  k.can_implement = check_grouped;
  k.test_problems = gemm_grouped_test_problems;
  // Combinations the one-parameter variations miss: small tiles with the host schedule and raster n, whole-tile
  // chains with fast accumulation (e4m3), direct stores with a deeper pipeline.
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"block_M", "64"}, {"block_N", "128"}, {"wgmma_N", "64"}, {"raster", "n"}, {"panel", "2"}, {"schedule", "host"}},
        {{"wgmma_N", "256"}, {"fast_accum", "true"}},
        {{"tma_store", "false"}, {"num_stages", "4"}}};
  };
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(grouped_rows(p).valid) * static_cast<double>(p.integer("N")) *
           static_cast<double>(p.integer("K"));
  };
  // Each valid row of A read once, each B_g of a group with rows once, each valid row of C written once (plus scales).
  k.min_bytes = [](const Values& p) {
    const GroupedRows g = grouped_rows(p);
    const double N = static_cast<double>(p.integer("N")), K = static_cast<double>(p.integer("K"));
    const double in = grouped_e4m3(p) ? 1 : 2, out = p.text("out_dtype") == "f32" ? 4 : 2;
    const auto [sa, sb] = grouped_scale_shapes(p, g.total);
    double scales = 0;
    if (grouped_scaling(p) != gemm_detail::kScaleNone)
      for (const auto* shape : {&sa, &sb}) {
        double n = 1;
        for (auto d : *shape) n *= static_cast<double>(d);
        scales += 4 * n;
      }
    return static_cast<double>(g.valid) * K * in + static_cast<double>(g.groups_with_rows) * N * K * in +
           static_cast<double>(g.valid) * N * out + scales;
  };
  k.reference = grouped_reference;
  // bf16 inputs: gemm.wgmma's bounds (inputs in [-1, 1)); e4m3: gemm.fp8's.
  k.tolerance = [](const Values& p, DType) {
    const double K = static_cast<double>(p.integer("K"));
    if (grouped_e4m3(p)) return fp8_tolerance(p);
    return p.text("out_dtype") == "f32" ? Tolerance{5e-4, 5e-4 * std::sqrt(K)} : Tolerance{1e-2, 0.02 * std::sqrt(K)};
  };
  k.probes = gemm_fp8_probe_names();  // the main loop's (gemm_kmajor.cuh)
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto k_blocks = (p.integer("K") + grouped_config(p, c).block_K - 1) / grouped_config(p, c).block_K;
    return kmajor_probe_capacity(grouped_tiles(p, c), l.sm_count, k_blocks);
  };
  k.name_expression = [](const Values& p, const Values& c) { return name_expression(grouped_config(p, c)); };
  // Persistent: one CTA per SM at most, capped at the tiles (at least one: with every row masked it has none).
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& l) {
    LaunchGeometry g;
    const auto tiles = std::max<std::int64_t>(grouped_tiles(p, c), 1);
    g.grid.x = static_cast<std::uint32_t>(std::min<std::int64_t>(tiles, std::max(l.sm_count, 1)));
    g.persistent = true;
    const GemmGroupedConfig cfg = grouped_config(p, c);
    g.block.x = static_cast<std::uint32_t>(cfg.threads());
    g.dynamic_smem = static_cast<std::uint32_t>(grouped_smem_bytes(cfg, static_cast<int>(p.integer("G"))));
    return g;
  };
  // Kernel signature: (tma_A, tma_B, tma_C, scale_A, scale_B, C, group_rows, row_tiles, groups, M_max, N, K,
  // row_tile_count). A is [rows, K] (contiguous) or [G, M, K] (masked), B [G, N, K], C like A with N columns; the
  // tensor maps see them as 2-D, [rows, K], [G N, K] and [rows, N]. group_rows is `offsets` (contiguous, G + 1 starts)
  // or `masked_m` (G counts); row_tiles the host schedule's list (device schedule: one unread entry). Where C has rows
  // of no group, it is an inout tensor filled at random: those rows must keep it.
  k.args = [](const Values& p, const Values& c, const DeviceLimits&) {
    const auto G = p.integer("G"), M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
    const GemmGroupedConfig cfg = grouped_config(p, c);
    const GroupedRows g = grouped_rows(p);
    const bool masked = cfg.masked;
    const DType in = cfg.e4m3 ? DType::e4m3 : DType::bf16;
    const Fill fill_a = cfg.e4m3 ? Fill{.lo = -2, .hi = 2, .seed = 1} : Fill{.lo = -1, .hi = 1, .seed = 1};
    const Fill fill_b = cfg.e4m3 ? Fill{.lo = -2, .hi = 2, .seed = 2} : Fill{.lo = -1, .hi = 1, .seed = 2};
    const auto rows = masked ? std::vector<std::int64_t>{G, M} : std::vector<std::int64_t>{g.total};
    auto shape = [&](std::int64_t cols) {
      std::vector<std::int64_t> s = rows;
      s.push_back(cols);
      return s;
    };
    ArgSpec a = ArgSpec::tensor("A", in, shape(K), ArgRole::in, fill_a);
    ArgSpec b = ArgSpec::tensor("B", in, {G, N, K}, ArgRole::in, fill_b);
    a.is_param = b.is_param = false;
    const DType out = out_type(p);
    ArgSpec cc = masked || g.valid == 0 ? ArgSpec::tensor("C", out, shape(N), ArgRole::inout, {.lo = -1, .hi = 1, .seed = 5})
                                        : ArgSpec::tensor("C", out, shape(N), ArgRole::out);
    const auto [sa, sb] = grouped_scale_shapes(p, g.total);
    std::vector<ArgSpec> args = {a, b};
    for (ArgSpec& x : kmajor_maps_and_scales(make_plan(cfg), cfg.tma_store, sa, sb)) {
      if (x.kind == ArgSpec::Kind::tensor_map)
        x.map_shape = x.tensor_of == "B" ? std::vector<std::int64_t>{G * N, K}
                                         : std::vector<std::int64_t>{g.total, x.tensor_of == "C" ? N : K};
      args.push_back(std::move(x));
    }
    args.push_back(cc);
    const std::vector<std::int32_t> list = grouped_row_tiles(g, cfg.block_M);
    args.push_back(masked ? ArgSpec::i32_data("masked_m", g.rows) : ArgSpec::i32_data("offsets", g.offsets));
    args.push_back(ArgSpec::i32_data("row_tiles", cfg.host_schedule && !list.empty() ? list : std::vector<std::int32_t>{0}));
    for (const auto& [name, v] : std::vector<std::pair<const char*, std::int64_t>>{
             {"groups", G}, {"M_max", M}, {"N", N}, {"K", K}, {"row_tile_count", static_cast<std::int64_t>(list.size())}})
      args.push_back(ArgSpec::scalar(name, DType::i32, static_cast<double>(v)));
    return args;
  };
  k.layouts = [](const Values& p, const Values& c) { return kmajor_layouts(grouped_config(p, c), p.text("out_dtype")); };
  return k;
}
}  // namespace

std::vector<KernelSpec> gemm_tc_kernels() {
  return {gemm_mma_spec(), gemm_wgmma_spec(), gemm_fp8_spec(), gemm_grouped_spec()};
}

}  // namespace tl
