// Host specs of the tensor-core GEMMs gemm.mma (Ampere-style) and gemm.wgmma (Hopper): C = A · op(B), 16-bit inputs.
#include <algorithm>
#include <cmath>

#include "gemm/gemm_mma_plan.hpp"
#include "gemm/gemm_wgmma_plan.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "runtime/trace/model.hpp"
#include "tile/layout_spec.hpp"

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
  k.baseline = [](const Values& p) -> std::optional<BaselineSpec> {
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

Result<Timeline> model_wgmma(const KernelInstance& inst, const ModelDevice& d) {
  GemmModelInputs g = gemm_model_inputs(inst, d);
  GemmModelCosts& c = g.costs;
  const auto bm = inst.config.integer("block_M"), bn = inst.config.integer("block_N");
  GemmWgmmaModel m;
  m.stages = static_cast<int>(inst.config.integer("num_stages"));
  m.consumers = static_cast<int>(bm / 64);
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
  c.mma_ns = 2.0 * 64 * static_cast<double>(bn) * 64 / (d.wgmma_flops / g.sms * 1e-9);
  // With the TMA-store epilogue the consumer only stages its tile in shared memory; the TMA store drains it during
  // the next tile. Without, its threads store to global memory at the SM's share of HBM. It is on when the
  // kernel's tma_C map covers C (tma_store=auto decides by the output type; A is mapped there otherwise).
  const bool tma_store = std::any_of(inst.args.begin(), inst.args.end(), [](const ArgSpec& a) {
    return a.kind == ArgSpec::Kind::tensor_map && a.name == "tma_C" && a.tensor_of == "C";
  });
  c.epilogue_ns = d.epilogue_fixed_ns + 64.0 * static_cast<double>(bn) * g.elem / (tma_store ? g.load_bw : g.store_bw);
  std::string shape = "one warp per warpgroup shown (the others run the same schedule)";
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

// [SECTION] the specs

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

// The TMA-store epilogue: `auto` takes it where it is the fast path and fits — a 16-bit C whose rows are whole
// 16-byte units (the tensor map's rule); an f32 C stores directly from registers (its staging tile would not fit
// beside 3 stages at 128 x 256, and direct stores measured as fast on the H100).
bool wgmma_tma_store(const Values& p, const Values& c) {
  const std::string v = c.text("tma_store");
  if (v != "auto") return v == "true";
  const auto c_bytes = static_cast<std::int64_t>(dtype_size(out_type(p)));
  return c_bytes == 2 && (p.integer("N") * c_bytes) % 16 == 0;
}

// The kernel's one template argument for a validated problem and config.
GemmWgmmaConfig wgmma_config(const Values& p, const Values& c) {
  auto i = [&](const char* name) { return static_cast<int>(c.integer(name)); };
  return {.block_M = i("block_M"),
          .block_N = i("block_N"),
          .block_K = 64,
          .num_stages = i("num_stages"),
          .panel = i("panel"),
          .raster_n = c.text("raster") == "n",
          .tma_store = wgmma_tma_store(p, c),
          .cluster_M = i("cluster_M"),
          .cluster_N = i("cluster_N"),
          .bf16 = p.dtype() == DType::bf16,
          .trans_B = p.boolean("trans_B"),
          .out_dtype = static_cast<gemm_detail::OutType>(out_code(p))};
}
GemmWgmmaPlan wgmma_plan(const Values& p, const Values& c) { return make_plan(wgmma_config(p, c)); }

// The C staging tiles of the TMA-store epilogue, one 64 x block_N tile of out_dtype per consumer: an f32 C doubles
// them.
std::int64_t wgmma_staging(const Values& p, const Values& c) {
  return static_cast<std::int64_t>(wgmma_config(p, c).consumers()) * wgmma_plan(p, c).c_tile_bytes;
}
std::int64_t wgmma_smem(const Values& p, const Values& c) { return wgmma_plan(p, c).bytes; }

// Cluster shape (cluster_M x cluster_N CTAs) and the number of tiles (clusters of tiles) of the persistent grid.
std::int64_t wgmma_cluster(const Values& c) { return c.integer("cluster_M") * c.integer("cluster_N"); }
std::int64_t wgmma_cluster_tiles(const Values& p, const Values& c) {
  const auto tiles_m = (p.integer("M") + c.integer("block_M") - 1) / c.integer("block_M");
  const auto tiles_n = (p.integer("N") + c.integer("block_N") - 1) / c.integer("block_N");
  const auto cm = c.integer("cluster_M"), cn = c.integer("cluster_N");
  return ((tiles_m + cm - 1) / cm) * ((tiles_n + cn - 1) / cn);
}

Status check_wgmma(const Values& p, const Values& c, const DeviceLimits& limits) {
  TL_RETURN_IF_ERROR(check_problem(p));
  if (wgmma_cluster(c) > 2)
    return refuse("cluster_M=" + c.text("cluster_M") + " x cluster_N=" + c.text("cluster_N") +
                  " is a cluster of 4 CTAs; gemm.wgmma pairs 2 CTAs that share one operand: set cluster_M=2 (pairs "
                  "share B) or cluster_N=2 (pairs share A), not both");
  const auto c_bytes = static_cast<std::int64_t>(dtype_size(out_type(p)));
  if (wgmma_tma_store(p, c) && (p.integer("N") * c_bytes) % 16 != 0)
    return refuse("tma_store=true needs 16-byte rows of C for the tensor map (N a multiple of " +
                  std::to_string(16 / c_bytes) + " for " + dtype_name(out_type(p)) + "); N=" + p.text("N") +
                  ": set tma_store=false");
  const std::string stages = c.text("num_stages") + " stages of " + c.text("block_M") + "x64 + " + c.text("block_N") +
                             "x64 tiles";
  if (wgmma_staging(p, c) == 0) return check_smem(wgmma_smem(p, c), limits, stages, "lower num_stages or block_N");
  return check_smem(wgmma_smem(p, c), limits,
                    stages + " plus the " + c.text("block_M") + "x" + c.text("block_N") + " " + dtype_name(out_type(p)) +
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
  k.config = {{ParamSpec::one_of("block_M", 128, {64, 128}, "rows of C per tile: 64 per consumer warpgroup"),
               ParamSpec::one_of("block_N", 256, {128, 256}, "columns of C per tile (the wgmma N)"),
               ParamSpec::integer("num_stages", 3, 2, 8, "TMA pipeline depth (block_K = 64 per stage)"),
               ParamSpec::one_of("panel", 16, {1, 2, 4, 8, 16, 32}, "rasterization: tile rows (columns) walked together"),
               ParamSpec::enumeration("raster", "m", {"m", "n"},
                                      "raster order: m = panels of tile rows walked column by column (CTAs share A "
                                      "rows in L2); n = panels of tile columns walked row by row (they share B)"),
               ParamSpec::enumeration("tma_store", "auto", {"auto", "true", "false"},
                                      "epilogue through smem + TMA stores overlapping the next tile (auto: for a 16-bit C "
                                      "with 16-byte rows; an f32 C stores from registers)"),
               ParamSpec::one_of("cluster_M", 1, {1, 2},
                                 "2: CTA pairs take 2 tiles along M and TMA-multicast the B tile they share (half each)"),
               ParamSpec::one_of("cluster_N", 1, {1, 2},
                                 "2: CTA pairs take 2 tiles along N and TMA-multicast the A tile they share (half each)")}};
  k.can_implement = check_wgmma;
  // Cluster pairs where the one-parameter variations cannot reach: direct stores (the odd-N problems refuse
  // tma_store), an N-major B of one 64-column box per CTA with raster n, and 64 x 128 tiles.
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"cluster_M", "2"}, {"tma_store", "false"}},
        {{"cluster_N", "2"}, {"tma_store", "false"}},
        {{"cluster_M", "2"}, {"block_N", "128"}, {"raster", "n"}, {"panel", "2"}},
        {{"cluster_N", "2"}, {"block_M", "64"}, {"block_N", "128"}, {"num_stages", "4"}}};
  };
  k.probes = gemm_wgmma_probe_names();
  // Per warp and pipeline iteration: the producer's two regions, or a consumer's two regions and its release (begin +
  // end each), plus an epilogue per tile; iterations = the tiles of the busiest CTA x k-steps.
  // With clusters: the cluster tiles of the busiest cluster (each CTA of a pair walks all of them).
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits& l) {
    const auto tiles = wgmma_cluster_tiles(p, c);
    const auto grid = std::min<std::int64_t>(tiles, std::max<std::int64_t>(l.sm_count / wgmma_cluster(c), 1));
    const auto per_block = (tiles + grid - 1) / grid;
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
    g.grid.x = static_cast<std::uint32_t>(std::min<std::int64_t>(wgmma_cluster_tiles(p, c), clusters) * cluster);
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
  k.args = [](const Values& p, const Values& c, const DeviceLimits&) {
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
                              wgmma_tma_store(p, c) ? ArgSpec::tensor_map("tma_C", "C", box(plan.box_C), swizzle)
                                                     : ArgSpec::tensor_map("tma_C", "A", box(plan.box_A), swizzle),
                              ops[2]};
    for (auto& s : sizes(p)) a.push_back(std::move(s));
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
    if (auto acc = fragment_spec(plan.acc, "wgmma.m64n" + std::to_string(cfg.block_N) + "k16.f32.C"))
      l.push_back({"wgmma_C", *acc});
    if (cfg.tma_store) l.push_back({"smem_C", memory_spec(plan.smem_C, dtype_name(out_type(p)))});
    return l;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> gemm_tc_kernels() { return {gemm_mma_spec(), gemm_wgmma_spec()}; }

}  // namespace tl
