// Host spec of gemm.dequant (Hopper): C = A · dequant(W)^T, bf16 activations times packed 4-bit weights (int4 or fp4
// e2m1) with group-wise scales, the weights dequantized in registers (gemm_dequant.cuh).
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gemm/gemm_dequant_gemv_plan.hpp"
#include "gemm/gemm_dequant_plan.hpp"
#include "runtime/core/numeric.hpp"
#include "runtime/spec/kernel_spec.hpp"
#include "tile/layout_spec.hpp"

namespace tl {
namespace {

Status refuse(std::string why) { return make_error(ErrorCode::unsupported, std::move(why)); }

Schema dequant_problem() {
  return {{ParamSpec::integer("M", 16, 1, 1 << 20, "rows of A and C (tokens): 1-16 decode, 1024+ prefill"),
           ParamSpec::integer("N", 8192, 1, 1 << 20, "columns of C, rows of the weights W [N, K]"),
           ParamSpec::integer("K", 8192, 32, 1 << 20, "the reduction; a multiple of 32 (rows of W are K/2 bytes, "
                                                       "copied in 16-byte units)"),
           ParamSpec::enumeration("wtype", "int4", {"int4", "fp4"},
                                  "weight codes: int4 = signed two's complement -8..7; fp4 = e2m1 (OCP MX), "
                                  "+-{0, 0.5, 1, 1.5, 2, 3, 4, 6}; two per byte, the even k in the low nibble"),
           ParamSpec::one_of("group", 128, {32, 64, 128}, "k per scale: scales [N, ceil(K/group)]"),
           ParamSpec::enumeration("scale_dtype", "bf16", {"bf16", "f32"}, "type of the scales")}};
}

std::int64_t k_groups(const Values& p) { return (p.integer("K") + p.integer("group") - 1) / p.integer("group"); }

// auto: the smallest wgmma N (16, 32, 64) that holds all of M (decode: one activation tile, the weights read once),
// else 256 (prefill: the widest wgmma, the most math per weight byte dequantized; on the H200 at 4096 x 8192 x 8192
// 1.31x the time of 128 with block_N 128).
int block_m(const Values& p, const Values& c) {
  if (c.integer("block_M") != 0) return static_cast<int>(c.integer("block_M"));
  const auto M = p.integer("M");
  for (int b : {16, 32, 64})
    if (M <= b) return b;
  return 256;
}
// auto: 64 weight rows per CTA (one consumer) while M fits one 64-row tile (decode: twice the CTAs over N), else 128
// (two consumers share each activation tile: 1.19x at the prefill shape on the H200).
int block_n(const Values& p, const Values& c) {
  if (c.integer("block_N") != 0) return static_cast<int>(c.integer("block_N"));
  return p.integer("M") <= 64 ? 64 : 128;
}

// The shared memory one of `ctas` CTAs on a Hopper SM may take: the opt-in limit per block, or for two an even
// share of the SM's 228 KiB, less the 1 KiB the hardware reserves per block.
int smem_share(int ctas) {
  return ctas == 1 ? limits_for_arch("sm_90a").smem_per_block_optin : 233472 / ctas - 1024;
}

// [SECTION] the decode path (path=gemv)

GemmDequantGemvConfig gemv_config(const Values& p, const Values& c);
bool gemv_deep_grid(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg);

// auto: gemv where it measured faster than wgmma (H100, docs/perf.md): every M <= 8 at all four projection shapes
// (M 5-8 at 8192 x 8192 by 3-5%, M 1-8 at 28672 x 8192 by 1.25x; the gemv feeds section); at M 9-16 where the wgmma
// path's grid, one CTA per block_N weight rows on 132 SMs, fills less than 90% of its last wave — gemv splits K, so
// it fills the SMs at any N (merged-main section of 2026-11-26: 1.12-1.18x at 28672 x 8192, 1.51-1.65x at
// 4096 x 14336) — and on gemv's deep grids (gemv_deep_grid; session 38's merged-main calls, M 12 and 16 at 8192 x
// 28672: int4 (3 CTAs an SM, the LOP3) 1.13-1.14x wgmma, fp4 group 32 1.09-1.13x). At 8192 x 8192 (97% of the last
// wave, not deep) gemv was 1.02-1.04x there too, but its 64-register build spills; wgmma stays.
bool gemv_path(const Values& p, const Values& c) {
  const std::string& path = c.text("path");
  if (path != "auto") return path == "gemv";
  const auto M = p.integer("M");
  if (M <= 8 || M > 16) return M <= 8;
  if (gemv_deep_grid(p, c, gemv_config(p, c))) return true;
  const std::int64_t sms = limits_for_arch("sm_90a").sm_count, bn = block_n(p, c);
  const std::int64_t ctas = (p.integer("N") + bn - 1) / bn;
  return static_cast<double>(ctas) < 0.9 * static_cast<double>((ctas + sms - 1) / sms * sms);
}

// auto: batched loads for M <= 8 (one n tile). On the H100 (docs/perf.md, gemv4 call 1) a lane asking
// for both 64-byte halves of a row's 128-byte line at once was 1.16-1.24x at 28672 x 8192 and 8192 x 28672 (M 1, 4),
// 1.03x at 8192 x 8192 and 1.00x at 4096 x 14336, whose 7-step splits start every other batch mid-line (splits rounded
// to whole batches cost it a partial wave: 0.90-0.93x, call 2); at M 16 it was 0.97-1.01x.
bool gemv_batch(const Values& p, const Values& c) {
  const std::string& b = c.text("batch");
  return b == "on" || (b == "auto" && p.integer("M") <= 8);
}

// group_sum applies to int4 whose groups are whole 128-k steps (one mma.sync sums a step's four lanes, one scale).
// Off by default: half the main loop's instructions, but 0.97-1.00x at the M <= 8 decode shapes on the H100
// (docs/perf.md, gemv6).
bool gemv_group_sum(const Values& p, const Values& c) {
  return c.boolean("group_sum") && p.text("wtype") == "int4" && p.integer("group") % kGemvStepK == 0;
}

// How the k steps (128 k each) are split: `splits` CTAs per row tile, each `steps` steps (the last fewer).
struct GemvSplit {
  std::int64_t splits = 1, steps = 1;
};
GemvSplit gemv_split_for(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg,
                         const DeviceLimits& limits);

std::int64_t tiles(std::int64_t n, std::int64_t block);
GemvSplit split_of(std::int64_t k_steps, std::int64_t splits);
GemvSplit gemv_split_rounds(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg,
                            const DeviceLimits& limits, std::int64_t rounds, bool exact = false);

// Whether the split grid of one row tile a CTA (the auto split's, at cfg's CTAs per SM) takes more than `waves` waves
// of CTAs on the H100's 132 SMs. One wave (M <= 8): 28672 x 8192 (896 CTAs, 1.7 waves) and 8192 x 28672 (1024) over
// it, 14336 x 4096 (448) not.
bool gemv_over_waves(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg, std::int64_t waves) {
  const DeviceLimits h100 = limits_for_arch("sm_90a");
  const std::int64_t ctas = tiles(p.integer("N"), cfg.rows()) * gemv_split_rounds(p, c, cfg, h100, 1).splits;
  return ctas > waves * std::int64_t{h100.sm_count} * cfg.min_blocks;
}

// M 9-16 where the grid of one row tile a CTA takes more than two waves: among the timed decode shapes 28672 x 8192
// (7 splits, 1568 CTAs, 3.0 waves at 4 CTAs an SM) and 8192 x 28672 (23 splits, 1472 CTAs, 2.8 waves), not 8192 x
// 8192 or 4096 x 14336 (under one wave). The M 9-16 autos of tile_rounds, ctas_per_sm and int4_lop3 take these grids
// apart by N against K.
bool gemv_deep_grid(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  const auto M = p.integer("M");
  return M >= 9 && M <= 16 && gemv_over_waves(p, c, cfg, 2);
}

// Row tiles per CTA of the split schedule (tile_rounds; 1 with schedule=stream, which deals the tiles itself, and
// with cluster sums). auto: 2 on a deep grid (gemv_deep_grid) whose row tiles outnumber its k steps (N > K), else 1:
// a rule fitted to the two shapes over two waves measured. H100, docs/perf.md (gemv9): 28672 x 8192 M 16 int4
// 1.03-1.07x in five alternated rounds, fp4 1.07x, M 12 1.04-1.05x; 8192 x 28672 M 16 0.94x; under two waves
// 0.50-0.73x (M 16 at 8192 x 8192, 4096 x 14336), and at M 4 and 8 0.80-0.94x. int4 only since gemvh200 (H200, four
// alternated rounds, 28672 x 8192: fp4 with one tile a CTA 1.014-1.030x two at group 32 M 9 and 12 and 1.025-1.029x at
// group 128 M 16 by medians, minima 1.013-1.028x). And int4 M 8 with N > K over one wave (gemvh200, H200: 28672 x
// 8192 two tiles a CTA 1.030-1.046x and 1.027-1.032x one in four alternated rounds of each of two calls, minima
// 1.035-1.044x; the H100 had 0.80-0.94x at M 4 and 8 before the unrolled loop).
std::int64_t gemv_tile_rounds(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  if (cfg.stream || cfg.cluster_reduce) return 1;
  if (c.integer("tile_rounds") != 0) return c.integer("tile_rounds");
  const bool m8 = p.integer("M") == 8 && gemv_over_waves(p, c, cfg, 1);
  return cfg.wtype == dequant4::kInt4 && p.integer("N") > p.integer("K") && (m8 || gemv_deep_grid(p, c, cfg)) ? 2 : 1;
}

// What stage_copy=tma needs of the rest of the config: the split schedule's permuted weights with global sums (the
// kernel's static_assert; auto takes tma only there, can_implement refuses it elsewhere).
bool tma_staging_fits(const GemmDequantGemvConfig& cfg) {
  return cfg.permuted && !cfg.stream && !cfg.cluster_reduce && !cfg.group_sum;
}

// The tall one-tile int4 grid (gemv22's autos): int4 group 128 on a deep grid with one row tile a CTA at 3 CTAs an SM
// (N <= K: 8192 x 28672), and whether its autos take the unrolled loop's (step_loop auto or unrolled, K whole steps;
// auto unrolls it there, gemv_unroll_auto).
bool gemv_tall_grid(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  return cfg.wtype == dequant4::kInt4 && cfg.group == 128 && !cfg.tile_loop && cfg.min_blocks == 3 &&
         gemv_deep_grid(p, c, cfg);
}
bool gemv_tall_unroll(const Values& p, const Values& c) {
  return c.text("step_loop") != "runtime" && p.integer("K") % kGemvStepK == 0;
}
bool gemv_unroll_auto(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg);

GemmDequantGemvConfig gemv_config_as_given(const Values& p, const Values& c) {
  const int rows = static_cast<int>(c.integer("warp_rows"));
  // auto CTAs per SM: 4 for 16 rows per warp (64 registers; 3 on the deep grids below), 2 for 32.
  const int ctas = static_cast<int>(c.integer("ctas_per_sm") != 0 ? c.integer("ctas_per_sm") : rows == 32 ? 2 : 4);
  const int n_tiles = p.integer("M") <= 8 ? 1 : 2;
  GemmDequantGemvConfig cfg{.warp_rows = rows,
          .n_tiles = n_tiles,
          .prefetch = static_cast<int>(c.integer("prefetch")),
          .min_blocks = ctas,
          .l2_prefetch = c.boolean("l2_prefetch"),
          .batch = gemv_batch(p, c),
          .stream = c.text("schedule") == "stream",
          .int4_lop3 = c.text("int4_lop3") == "on" || (c.text("int4_lop3") == "auto" && p.integer("M") <= 8),
          .fp4_fold = c.boolean("fp4_fold"),
          .group_sum = gemv_group_sum(p, c),
          .step_scale = c.text("step_scale") == "on",
          .cluster_reduce = c.text("reduce") == "cluster",
          // auto: two rounds at one n tile; at two a second round's registers cost spills (gemv6, docs/perf.md).
          .stage_rounds = static_cast<int>(c.integer("stage_rounds") != 0 ? c.integer("stage_rounds") : 3 - n_tiles),
          // auto: on for M <= 8; at M 16 it measured 0.94-0.99x (docs/perf.md, gemv7).
          .act_first = c.text("act_first") == "on" || (c.text("act_first") == "auto" && n_tiles == 1),
          .permuted = c.text("weight_layout") != "plain",
          .stage_async = c.text("stage_copy") == "async" || c.text("stage_copy") == "tma",
          .stage_tma = c.text("stage_copy") == "tma",
          .act_multicast = static_cast<int>(std::max<std::int64_t>(1, c.integer("act_multicast"))),
          .wtype = p.text("wtype") == "fp4" ? dequant4::kFp4 : dequant4::kInt4,
          .group = static_cast<int>(p.integer("group")),
          .scale_f32 = p.text("scale_dtype") == "f32"};
  // Whether the split grid (one row tile a CTA, the split as on the H100's 132 SMs) takes more than one wave of CTAs.
  const bool over_one_wave = !cfg.stream && gemv_over_waves(p, c, cfg, 1);
  // reduce=auto: the cluster's code only where its launch takes one (gemv_cluster), the split as on the H100's 132 SMs
  // (a CTA of one row tile: tile_rounds above 1 take global sums), and the grid is one wave at most: a cluster's CTAs
  // start together, so a later wave waits for a GPC with four free slots. H200, docs/perf.md (gemvh200, four
  // alternated rounds in each of two calls): global sums at 28672 x 8192 (896 CTAs, 1.7 waves) M 1 1.069-1.099x the
  // cluster by medians (minima 1.067-1.096x), with the unrolled loop M 2-4 1.037-1.055x; at 14336 x 4096 (448 CTAs,
  // under a wave) the cluster stays 1.09-1.16x ahead at M 1 and 4. (The H100 had the cluster 1.02-1.05x ahead at
  // 28672 x 8192 M 1 in gemv7, many kernel versions ago: not re-measured.)
  if (c.text("reduce") == "auto" && p.integer("M") <= 4 && !cfg.stream && c.integer("tile_rounds") <= 1 &&
      !cfg.stage_tma && !over_one_wave) {
    const std::int64_t splits = gemv_split_rounds(p, c, cfg, limits_for_arch("sm_90a"), 1).splits;
    cfg.cluster_reduce = splits >= 2 && splits <= 4;
  }
  // stage_copy=auto: async on the split schedule where the weights are the kernel's permuted copy (with group_sum each
  // thread then reads its copied chunks back for the step sums) at M >= 8, and below 8 where the grid is over a wave.
  // H100 (docs/perf.md, 2026-11-27, merged-main call, A B B A) 1.03-1.05x at M 8 and 16 of 28672 x 8192 and M 8 of
  // 8192 x 28672, even at M 16 there (0.997-1.004x); M 4 1.01x and M 1 0.99x. H200 (gemvh200, with the unrolled loop
  // and global sums): 28672 x 8192 M 4 1.035x, 8192 x 28672 M 4 1.055x, M 1 1.01x, M 1 of 28672 x 8192 even.
  if (c.text("stage_copy") == "auto")
    cfg.stage_async = (p.integer("M") >= 8 || over_one_wave) && cfg.permuted && !cfg.stream;
  // ctas_per_sm=0 at 16 rows a warp, split schedule: 3 CTAs an SM (80 registers, no spills) on a deep grid with
  // N <= K (where tile_rounds keeps one tile a CTA), else 4. And int4_lop3=auto is also on at M 9-16 on a deep grid
  // with two tiles a CTA or 3 CTAs an SM, where the bias register no longer costs what it saves. H100, docs/perf.md
  // (gemv11, A B B A, two rounds each): 8192 x 28672 M 12 and 16 with both 1.09-1.10x (3 CTAs alone 1.03x, the LOP3
  // alone 0.99x); 28672 x 8192 (two tiles a CTA) the LOP3 1.04-1.05x, 3 CTAs there 0.82-0.85x.
  // fp4 likewise since gemvh200 (H200, four alternated rounds, 8192 x 28672 M 16: 16 splits at 3 CTAs an SM against
  // 28 at 4, group 32 1.155-1.164x, group 128 1.144-1.153x by medians, minima alike; at 28672 x 8192, two tiles a CTA,
  // 0.79x, as int4 there).
  const bool deep = gemv_deep_grid(p, c, cfg);
  if (deep && c.integer("ctas_per_sm") == 0 && rows == 16 && !cfg.stream && p.integer("N") <= p.integer("K"))
    cfg.min_blocks = 3;
  cfg.tile_loop = gemv_tile_rounds(p, c, cfg) > 1;
  // sums_once=auto: on for int4 wherever a CTA holds several row tiles. H100, docs/perf.md (gemv13, two calls, A B B
  // A): int4 at 28672 x 8192 (auto's two tiles a CTA) M 16 1.056-1.060x, M 12 1.053-1.063x, M 9 1.055-1.058x by
  // medians in every round (the two tiles' arrivals one after another cost a second atomic round trip); fp4 group 128
  // there 0.965-0.976x (its build spills 56 B against 16): off for fp4.
  const std::string sums = c.text("sums_once");
  cfg.sums_once = cfg.tile_loop && (sums == "on" || (sums == "auto" && cfg.wtype == dequant4::kInt4));
  if (c.text("int4_lop3") == "auto" && deep && cfg.wtype == dequant4::kInt4 && (cfg.tile_loop || cfg.min_blocks == 3))
    cfg.int4_lop3 = true;
  // step_scale=auto: on for int4 group 128 on the deep M 9-16 grids (two n tiles, where the stream is issue-bound: the
  // 16 HMMA a step and the conversion's HMUL2 a pair). H100, docs/perf.md (gemv12, two calls, A B B A): 1.010-1.031x
  // at M 12 and 16 of 28672 x 8192 and 8192 x 28672 by medians and minima in all four rounds, M 9 (28672 x 8192)
  // 1.027-1.029x; under two waves (8192 x 8192, 4096 x 14336, M 12 and 16, where its extra spill weighs) 0.975-0.985x,
  // fp4 group 128 0.99x, M 8 0.99-1.01x: off there.
  if (c.text("step_scale") == "auto")
    cfg.step_scale = deep && cfg.wtype == dequant4::kInt4 && cfg.group % kGemvStepK == 0 && !cfg.group_sum;
  // stage_copy=auto (and act_multicast=0), group 128 on the deep M 9-16 grids: tma, with pairs of row-tile CTAs
  // multicasting each step where a CTA holds one int4 row tile (N <= K, 3 CTAs an SM); fp4 async. H100, docs/perf.md
  // (gemvwg1, four alternated rounds, since gemv19's unrolled loop): fp4 async against tma 1.096-1.116x at 28672 x 8192
  // M 16, 1.113-1.119x at M 12, 1.029-1.038x at 8192 x 28672 M 16 (multicast) by medians, minima 1.03-1.11x (gemv14
  // had tma ahead before the loop was unrolled). (gemv14, two calls, A B B A): int4 8192 x 28672 M 16 1.030-1.046x
  // (minima 1.034-1.058x), M 12 1.032-1.038x, M 9 1.027-1.030x in every round; fp4 8192 x 28672 M 16 (multicast)
  // 1.036-1.037x, 28672 x 8192 M 16 (tma) 1.018-1.026x, M 12 1.027-1.034x; int4 at 28672 x 8192 (two tiles a CTA)
  // tma 0.90-0.95x at M 9-16 (0.92x without sums_once) and at M 8 0.96-0.99x: async there. (gemv15: that tma build
  // spills the step scales; with step_scale=off it is spill-free but still 0.92-0.94x, with act_multicast=2 0.98-0.99x
  // at M 16, 0.96-0.97x at M 12, 0.91-0.92x at M 9, multicast 4 0.90-0.93x; fp4 there with multicast 2 1.00x.)
  // (gemv22, since the unrolled loop, four alternated rounds, H100) where that grid's loop is unrolled (step_loop
  // auto or unrolled, gemv_tall_unroll): M 9 async, M 10-12 tma with multicast 2, M 13-16 tma without (each M's
  // staging the one its timed build had: the three within 1% of each other in the screen, not told apart).
  const bool one_tile_int4 = cfg.wtype == dequant4::kInt4 && !cfg.tile_loop && cfg.min_blocks == 3;
  const bool tall_unroll = deep && cfg.group == 128 && one_tile_int4 && gemv_tall_unroll(p, c);  // (gemv_tall_grid)
  if (c.text("stage_copy") == "auto" && deep && cfg.group == 128 && one_tile_int4 && tma_staging_fits(cfg) &&
      !(tall_unroll && p.integer("M") <= 9)) {
    cfg.stage_async = cfg.stage_tma = true;
    if (c.integer("act_multicast") == 0 && !cfg.tile_loop && tiles(p.integer("N"), cfg.rows()) % 2 == 0 &&
        !(tall_unroll && p.integer("M") >= 13))
      cfg.act_multicast = 2;
  }
  // scale_copy (where step_scale is on, split schedule, and a row's scales are whole 16-byte chunks:
  // K a multiple of 1024 with bf16 scales, 512 with f32): smem = the CTA's step scales copied with its activations,
  // room for its tile_rounds row tiles. auto = smem for int4 where a CTA holds several row tiles: H100, docs/perf.md
  // (gemv16, A B B A): 28672 x 8192 M 16 1.020-1.033x, M 12 1.013-1.023x, M 9 1.007-1.026x by medians in all four
  // rounds, the loop's spilled step scale gone; its first build (the scales through registers, f32) 0.94-0.96x.
  // fp4 with step_scale=on 0.98x (not in auto). With stage_copy=tma the scales follow the barriers from a 16-byte
  // boundary (the plan's scales()): smem there 0.984-0.994x at int4 8192 x 28672 M 9-16 (one tile a CTA, multicast)
  // and 0.944x at fp4 28672 x 8192 M 16 (gemv17), so auto leaves tma builds alone. auto takes two tiles a CTA (as
  // timed) and only where the scales' room leaves the split as it was; and (gemv22) the tall one-tile int4 grid where
  // its loop is unrolled (tall_unroll: the split the unrolled loop's own, 16 x 14 at 8192 x 28672), tma or async.
  const std::string scale_copy = c.text("scale_copy");
  const std::int64_t scale_size = cfg.scale_f32 ? 4 : 2;
  if (cfg.step_scale && !cfg.stream && cfg.group == kGemvStepK &&
      tiles(p.integer("K"), cfg.group) * scale_size % 16 == 0 && (scale_copy == "smem" || scale_copy == "auto")) {
    const std::int64_t rounds = cfg.tile_loop ? gemv_tile_rounds(p, c, cfg) : 1;
    GemmDequantGemvConfig with = cfg;
    with.scale_smem = static_cast<int>(rounds);
    const DeviceLimits h100 = limits_for_arch("sm_90a");
    if (scale_copy == "smem" ||
        (cfg.wtype == dequant4::kInt4 && rounds == 2 && !cfg.stage_tma &&
         gemv_split_rounds(p, c, with, h100, rounds).splits == gemv_split_rounds(p, c, cfg, h100, rounds).splits) ||
        (tall_unroll && rounds == 1))
      cfg = with;
  }
  return cfg;
}

// batch=auto is also on at int4 M 9-16 where a CTA holds one row tile and stages its activations by TMA (the deep grids
// with N <= K, stage_copy's auto there) with the indexed loop: the config as batch=on gives it (its split counts whole
// batches). H100, docs/perf.md (gemv18, two calls, A B B A): 8192 x 28672 M 16 / 12 / 9 1.014-1.028x by medians and
// minima in all ten rounds; at two tiles a CTA (28672 x 8192, async staging) 0.98-0.995x: off there. Since the
// unrolled loop (gemv22, H100, four alternated rounds): off on that tall grid where its loop is unrolled (the
// unrolled builds of M 9-16 with batch off 1.026-1.067x the indexed batched default), on at int4 group 128 with two
// tiles a CTA where the loop is the indexed one (28672 x 8192 M 13-16; M 16 1.019-1.031x by medians, 1.023-1.029x by
// minima; indexed with batch on also ahead of off at M 9 and 12 in the screen), and on for fp4 group 128 at M 9-12 on a
// deep one-tile grid (8192 x 28672, the unrolled loop and async staging: M 9 1.000-1.019x, M 12 1.002-1.007x by
// medians, minima 1.005-1.016x).
GemmDequantGemvConfig gemv_config_batched(const Values& p, const Values& c) {
  const GemmDequantGemvConfig cfg = gemv_config_as_given(p, c);
  if (c.text("batch") != "auto" || cfg.batch || cfg.n_tiles != 2 || cfg.stream) return cfg;
  const bool unrolled = c.text("step_loop") == "unrolled" || gemv_unroll_auto(p, c, cfg);
  bool on = false;
  if (cfg.wtype == dequant4::kInt4 && cfg.stage_tma && !cfg.tile_loop)
    on = !(gemv_tall_grid(p, c, cfg) && gemv_tall_unroll(p, c));
  else if (cfg.wtype == dequant4::kInt4 && cfg.group == 128 && cfg.tile_loop && cfg.stage_async && !cfg.stage_tma)
    on = !unrolled;
  else if (cfg.wtype == dequant4::kFp4 && cfg.group == 128 && !cfg.tile_loop && p.integer("M") <= 12 &&
           p.integer("N") <= p.integer("K") && unrolled && gemv_deep_grid(p, c, cfg))
    on = true;
  if (!on) return cfg;
  Values v = c;
  v.set("batch", "on");
  const GemmDequantGemvConfig batched = gemv_config_as_given(p, v);
  return batched.stage_tma == cfg.stage_tma && batched.tile_loop == cfg.tile_loop ? batched : cfg;
}
// step_loop=unrolled (the kernel's CFG.unroll: the split schedule's main loop unrolled over a row tile's steps, every
// CTA's split the same steps, known when compiled): K a multiple of 128 and the split as on the H100's 132 SMs where its
// steps divide K's in whole prefetch rounds, else (splits=0) the cheapest such split by the same model; none: refused.
// (gemv_split_rounds then keeps the split of cfg.unroll on any device.) auto = unrolled (where such a split exists,
// else the indexed loop) for fp4 on the deep M 9-16 grids and for int4 with N > K at M 1 and 8-12, where it won every
// round; else runtime. H100, docs/perf.md (gemv19, A B B A, four rounds): int4 28672 x 8192 M 12 1.012-1.071x, M 9
// 1.004-1.062x, M 8 1.029-1.043x, M 1 1.008-1.019x by medians (minima 1.01-1.07x); fp4 group 128 M 16 28672 x 8192
// 1.039-1.057x, 8192 x 28672 (28 splits of 8 steps against 23 of 10) 1.067-1.081x; int4 M 16 28672 x 8192
// 0.985-1.015x by medians (minima 1.05x) and int4 8192 x 28672 M 9-16 (16 splits of 14 steps against 18 of 13, 84 B
// spilled) 0.976-1.011x: runtime there. gemv22 (four alternated rounds): that tall grid unrolled with batch off and the
// step scales in shared memory (gemv_tall_grid; staging by M, above) 1.049-1.067x the indexed default at M 9,
// 1.026-1.046x at M 12, 1.024-1.033x at M 16 by medians (minima 1.02-1.08x): unrolled there now.
// Whether a split can be unrolled: its CTAs all take the same steps, whole prefetch rounds of them.
bool unrollable(const GemvSplit& s, std::int64_t k_steps, int prefetch) {
  return s.steps > 0 && s.steps * s.splits == k_steps && s.steps % prefetch == 0;
}
// step_unroll=auto (gemv23, H200, one call, four alternated rounds A B B A, every run float64-checked): 2 steps an
// iteration (the last peeled) for int4 group 128 at M 9-16 on the deep grids where the loop is unrolled with two row
// tiles a CTA (28672 x 8192: M 9 1.041-1.091x, M 12 1.043-1.052x the whole split unrolled, and M 16 1.133-1.144x the
// indexed loop that was auto there; minima 1.04-1.14x) or one tile (8192 x 28672 M 16 1.111-1.119x; M 9 1.054x and
// M 12 1.086x the whole split unrolled by medians in both A B B A rounds of session 47's merged call, minima
// 1.04-1.08x); the main loop 190 -> 143.5 SASS a step at M 16 (the indexed loop's addresses and bounds), spill-free,
// and a loop body of 2 steps' code instead of 8 or 14. Else all: fp4 group 128 at M 16 0.98-0.99x on both grids and
// int4 M 8 0.94x at 28672 x 8192 in that call (not measured: other shapes, other tile rounds, splits set).
bool gemv_step_unroll_auto(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  const auto M = p.integer("M");
  return cfg.wtype == dequant4::kInt4 && cfg.group == 128 && !cfg.stream && M >= 9 && M <= 16 &&
         c.integer("splits") == 0 && gemv_deep_grid(p, c, cfg) &&
         ((cfg.tile_loop && gemv_tile_rounds(p, c, cfg) == 2) || gemv_tall_grid(p, c, cfg));
}
// Whether the unrolled loop (cfg.unroll steps, 0: the indexed loop) can run `by` steps an iteration: a multiple of
// prefetch dividing the split.
bool gemv_rolls_by(std::int64_t by, const GemmDequantGemvConfig& cfg) {
  return cfg.unroll > 0 && by > 0 && cfg.unroll % by == 0 && by % cfg.prefetch == 0;
}
// The steps an iteration of the unrolled loop (0: all of them).
std::int64_t gemv_step_unroll(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  const std::string v = c.text("step_unroll");
  if (v == "all") return 0;
  if (v == "auto") return gemv_step_unroll_auto(p, c, cfg) ? 2 : 0;
  return std::stoll(v);
}
// And (gemvh200, H200, four alternated rounds) int4 at M <= 8 wherever the indexed loop's own split can be unrolled
// (the same grid): 28672 x 8192 M 2 / 3 / 4 / 6 1.09-1.14x, 8192 x 28672 M 1 / 2 / 4 / 6 / 8 1.09-1.12x, 14336 x 4096
// M 4 1.10-1.13x by medians in every round (minima alike); where it would change the split (4096 x 14336, 16 splits
// of 7 steps against 14 of 8) 0.85-0.93x: the indexed loop there.
bool gemv_unroll_auto(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  if (c.text("step_loop") != "auto") return false;
  const auto M = p.integer("M");
  if (cfg.wtype == dequant4::kFp4) return gemv_deep_grid(p, c, cfg);
  if (M <= 8 && !cfg.stream && c.integer("tile_rounds") <= 1 && p.integer("K") % kGemvStepK == 0 &&
      unrollable(gemv_split_rounds(p, c, cfg, limits_for_arch("sm_90a"), 1), tiles(p.integer("K"), kGemvStepK),
                 cfg.prefetch))
    return true;
  // (gemv23: int4 M 13-16 with N > K too, where step_unroll rolls it: its auto or a number.)
  return (p.integer("N") > p.integer("K") &&
          (M == 1 || (M >= 8 && M <= 12) ||
           (M >= 13 && M <= 16 && c.text("step_unroll") != "all" && gemv_step_unroll_auto(p, c, cfg)))) ||
         gemv_tall_grid(p, c, cfg);
}
GemmDequantGemvConfig gemv_config(const Values& p, const Values& c) {
  GemmDequantGemvConfig cfg = gemv_config_batched(p, c);
  if ((c.text("step_loop") == "unrolled" || gemv_unroll_auto(p, c, cfg)) && !cfg.stream &&
      p.integer("K") % kGemvStepK == 0) {
    const std::int64_t k_steps = tiles(p.integer("K"), kGemvStepK),
                       rounds = cfg.tile_loop ? gemv_tile_rounds(p, c, cfg) : 1;
    const DeviceLimits h100 = limits_for_arch("sm_90a");
    GemvSplit split = gemv_split_rounds(p, c, cfg, h100, rounds);
    if (!unrollable(split, k_steps, cfg.prefetch) && c.integer("splits") == 0)
      split = gemv_split_rounds(p, c, cfg, h100, rounds, true);
    // int4 M 8 with N > K: twice the model's splits, each half the steps (gemv22, H100, four alternated rounds: at
    // 28672 x 8192 8 splits of 8 steps against 4 of 16 1.003-1.016x by medians, 1.016-1.023x by minima).
    if (c.integer("splits") == 0 && cfg.wtype == dequant4::kInt4 && p.integer("M") == 8 &&
        p.integer("N") > p.integer("K")) {
      const GemvSplit twice = split_of(k_steps, 2 * split.splits);
      if (twice.splits == 2 * split.splits && unrollable(twice, k_steps, cfg.prefetch)) split = twice;
    }
    if (unrollable(split, k_steps, cfg.prefetch)) cfg.unroll = static_cast<int>(split.steps);
  }
  // step_unroll: the unrolled loop rolled into iterations of that many steps (can_implement refuses one that is no
  // multiple of prefetch dividing the split, or set without an unrolled loop; all, or the split's own count: all
  // unrolled). auto = 2 (gemv_step_unroll_auto), else all.
  const std::int64_t by = gemv_step_unroll(p, c, cfg);
  if (by < cfg.unroll && gemv_rolls_by(by, cfg)) cfg.unroll_by = static_cast<int>(by);
  return cfg;
}

std::int64_t tiles(std::int64_t n, std::int64_t block) { return (n + block - 1) / block; }

// The most steps whose activations fit a CTA's share of the SM (min_blocks CTAs per SM), less 128 bytes for the
// kernel's static shared memory (its one int): a share filled to the byte would leave room for one CTA fewer.
std::int64_t gemv_max_steps(const GemmDequantGemvConfig& cfg) {
  const GemmDequantGemvPlan plan = make_plan(cfg);
  // (scale_smem: a row's scales take at most steps x scale_elem + 31 bytes, from a 16-byte boundary up to scale_pad
  // bytes past the barriers.)
  return (smem_share(cfg.min_blocks) - 128 - plan.align - 31 * plan.scale_rows - plan.scale_pad()) /
         (plan.step_bytes + plan.bar_bytes + plan.scale_rows * plan.scale_elem);
}
GemvSplit split_of(std::int64_t k_steps, std::int64_t splits) {
  const std::int64_t steps = tiles(k_steps, std::min(splits, k_steps));
  return {tiles(k_steps, steps), steps};
}
// auto: the split with the least modelled time: waves of CTAs (slots = SMs x min_blocks) x (steps + 2), the 2 being a
// CTA's fixed cost in steps (start, staging the activations, the partial sums), among those whose activations fit;
// ties to fewer splits (less partial-sum traffic).
// tile_rounds R: a grid of ceil(row tiles / R) columns, each CTA R tiles' steps after one staging.
GemvSplit gemv_split_rounds(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg,
                            const DeviceLimits& limits, std::int64_t rounds, bool exact) {
  const std::int64_t k_steps = tiles(p.integer("K"), kGemvStepK);
  // (cfg.unroll: the kernel was built for splits of that many steps, whatever the device.)
  if (cfg.unroll > 0) return split_of(k_steps, k_steps / cfg.unroll);
  if (c.integer("splits") != 0) return split_of(k_steps, c.integer("splits"));
  const std::int64_t row_tiles = tiles(tiles(p.integer("N"), cfg.rows()), rounds),
                     slots = std::int64_t{limits.sm_count} * cfg.min_blocks;
  // exact (step_loop=unrolled): only splits whose steps divide K's in whole prefetch rounds (none: steps 0).
  GemvSplit best = exact ? GemvSplit{k_steps, 0} : split_of(k_steps, k_steps);
  double best_cost = 1e300;
  for (std::int64_t s = 1; s <= k_steps; ++s) {
    const GemvSplit x = split_of(k_steps, s);
    if (x.splits != s || x.steps > gemv_max_steps(cfg)) continue;
    if (exact && !unrollable(x, k_steps, cfg.prefetch)) continue;
    const double cost = static_cast<double>(tiles(row_tiles * x.splits, slots) * (rounds * x.steps + 2));
    if (cost < best_cost) {
      best = x;
      best_cost = cost;
    }
  }
  return best;
}
GemvSplit gemv_split_for(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg,
                         const DeviceLimits& limits) {
  return gemv_split_rounds(p, c, cfg, limits, cfg.tile_loop ? gemv_tile_rounds(p, c, cfg) : 1);
}
GemvSplit gemv_split(const Values& p, const Values& c, const DeviceLimits& limits) {
  return gemv_split_for(p, c, gemv_config(p, c), limits);
}

// The launch of either schedule: grid (x, y), the most k steps a CTA stages (its shared memory), and the planes of
// partial sums a row tile may need (its CTAs).
struct GemvGrid {
  std::int64_t x = 1, y = 1, steps = 1, parts = 1;
};
GemvGrid gemv_grid(const Values& p, const Values& c, const DeviceLimits& limits) {
  const GemmDequantGemvConfig cfg = gemv_config(p, c);
  const std::int64_t row_tiles = tiles(p.integer("N"), cfg.rows());
  if (!cfg.stream) {
    const GemvSplit split = gemv_split(p, c, limits);
    return {tiles(row_tiles, cfg.tile_loop ? gemv_tile_rounds(p, c, cfg) : 1), split.splits, split.steps, split.splits};
  }
  // stream: the (tile, chunk) pairs over one wave of CTAs (whole waves where a CTA's share of them would not fit its
  // shared memory); CTA i takes chunks [i chunks / ctas, (i + 1) chunks / ctas), as the kernel computes.
  const std::int64_t unit = cfg.batch ? cfg.prefetch : 1, kc = tiles(tiles(p.integer("K"), kGemvStepK), unit);
  const std::int64_t chunks = row_tiles * kc, slots = std::int64_t{limits.sm_count} * cfg.min_blocks;
  const std::int64_t waves = tiles(chunks, slots * std::max<std::int64_t>(1, gemv_max_steps(cfg) / unit));
  const std::int64_t ctas = std::min(chunks, waves * slots);
  auto cta_of = [&](std::int64_t u) { return ((u + 1) * ctas - 1) / chunks; };
  std::int64_t parts = 1;
  for (std::int64_t t = 0; t < row_tiles; ++t) parts = std::max(parts, cta_of(t * kc + kc - 1) - cta_of(t * kc) + 1);
  return {ctas, 1, tiles(chunks, ctas) * unit, parts};
}

// The CTAs of a row tile's split that add their sums in one cluster (1: none, through global memory). auto: splits of
// 2-4 at M <= 4, where the cluster measured faster on the H100 (28672 x 8192's 4: 1.02-1.05x; at M 8 0.98x; splits of
// 8 and 16 0.82-0.92x, their CTAs waiting for the cluster's slowest: docs/perf.md, gemv7).
std::int64_t gemv_cluster(const Values& c, const GemmDequantGemvConfig& cfg, const GemvGrid& grid) {
  if (!cfg.cluster_reduce || cfg.stream || grid.y < 2) return 1;
  if (c.text("reduce") == "cluster") return grid.y <= kGemvMaxCluster ? grid.y : 1;
  return grid.y <= 4 ? grid.y : 1;
}

// A k lane frees a stage once its next one is loaded (while that one's first wgmma still reads), so each lane needs
// two stage slots of its own, and its slots are fixed (num_stages a multiple of k_split). (The lanes' partial sums
// then always fit over the activation stages: the kernel asserts it.)
bool split_fits(const GemmDequantConfig& cfg) {
  return cfg.num_stages % cfg.k_split == 0 && cfg.num_stages >= 2 * cfg.k_split;
}

GemmDequantConfig dequant_config(const Values& p, const Values& c) {
  GemmDequantConfig cfg{.block_N = block_n(p, c),
                        .block_M = block_m(p, c),
                        .block_K = static_cast<int>(c.integer("block_K")),
                        .num_stages = static_cast<int>(c.integer("num_stages")),
                        .wtype = p.text("wtype") == "fp4" ? dequant4::kFp4 : dequant4::kInt4,
                        .group = static_cast<int>(p.integer("group")),
                        .scale_f32 = p.text("scale_dtype") == "f32"};
  // auto: decode's small tiles (block_M <= 32, block_N 64) split each CTA's k over 2 consumer warpgroups (1.27-1.52x
  // faster on the H200 at N 8192 than two CTAs per SM, which are as fast or faster at N 28672; 4 leave a thread 96 registers,
  // measured slower, and fp4 or f32 scales spill);
  // without a split, two CTAs share an SM (a CTA's registers then fit twice). Else one consumer per row group.
  const bool decode = cfg.block_M <= 32 && cfg.block_N == 64;
  const auto split = c.integer("k_split"), ctas = c.integer("ctas_per_sm");
  cfg.k_split = split != 0 ? static_cast<int>(split) : decode ? 2 : 1;
  // An auto split halves until it suits a given num_stages (check_dequant's rules).
  while (split == 0 && cfg.num_stages != 0 && cfg.k_split > 1 && !split_fits(cfg)) cfg.k_split /= 2;
  cfg.ctas_per_sm = ctas != 0 ? static_cast<int>(ctas) : decode && cfg.k_split == 1 ? 2 : 1;
  // auto: scales staged in shared memory (prefill on the H100: 0.88x of bf16 gemm.wgmma -> 0.96x at group 32, 0.94x ->
  // 0.97x with int4 at group 128), except for split decode tiles with one scale group a stage, where the producer's
  // scale loads sit on the issue path of a memory-bound pipeline (fp4 at M 32, group 128: 7% slower; docs/perf.md).
  const std::string& feed = c.text("scale_feed");
  cfg.smem_scales = feed == "smem" || (feed == "auto" && !(cfg.k_split > 1 && cfg.stage_groups() == 1));
  // auto: the deepest pipeline up to 8 stages (a multiple of k_split) that fits the CTA's share of the SM's shared
  // memory (decode's small stages need the depth to keep enough weight bytes in flight).
  if (cfg.num_stages == 0) {
    cfg.num_stages = 8;
    while (cfg.num_stages > 2 * cfg.k_split &&
           (make_plan(cfg).bytes > smem_share(cfg.ctas_per_sm) || cfg.num_stages % cfg.k_split != 0))
      --cfg.num_stages;
  }
  return cfg;
}

// Each path's own options and the value that leaves them unset (auto, or the default where there is no auto): set
// otherwise on a problem that takes the other path, they were dropped without a word (the run record then named a
// config that did not run). test_gemm_dequant checks the values against the schema's defaults.
const std::vector<std::pair<std::string, std::string>>& gemv_only_options() {
  static const std::vector<std::pair<std::string, std::string>> o = {
      {"splits", "0"},       {"tile_rounds", "0"}, {"sums_once", "auto"},   {"warp_rows", "16"},
      {"prefetch", "2"},     {"l2_prefetch", "false"}, {"schedule", "split"}, {"int4_lop3", "auto"},
      {"fp4_fold", "true"},  {"group_sum", "false"}, {"step_scale", "auto"}, {"scale_copy", "auto"},
      {"reduce", "auto"},    {"stage_rounds", "0"}, {"stage_copy", "auto"},  {"act_multicast", "0"},
      {"act_first", "auto"}, {"batch", "auto"},  {"step_loop", "auto"},  {"step_unroll", "auto"}};
  return o;
}
const std::vector<std::pair<std::string, std::string>>& wgmma_only_options() {
  static const std::vector<std::pair<std::string, std::string>> o = {
      {"block_N", "0"}, {"block_M", "0"}, {"block_K", "128"}, {"num_stages", "0"}, {"scale_feed", "auto"}, {"k_split", "0"}};
  return o;
}

// The first option of the path this problem does not take that is set, as a refusal naming it, the path taken and why.
Status other_path_option(const Values& p, const Values& c, bool gemv) {
  const std::string path = c.text("path"), taken = gemv ? "gemv" : "wgmma", other = gemv ? "wgmma" : "gemv";
  for (const auto& [key, unset] : gemv ? wgmma_only_options() : gemv_only_options()) {
    if (c.text(key) == unset) continue;
    const std::string why = path != "auto" ? "path=" + path + " is set"
                            : gemv           ? "path=auto takes gemv at M=" + p.text("M") + " of this N and K"
                            : p.integer("M") > 16 ? "M=" + p.text("M") + " is over gemv's 16"
                                                  : "path=auto takes wgmma at M=" + p.text("M") + " of this N and K";
    const bool can_switch = other == "wgmma" || p.integer("M") <= 16;
    return refuse(key + "=" + c.text(key) + " is path=" + other + "'s option, and this problem runs path=" + taken +
                  " (" + why + "), which has no use for it: leave " + key + " at " + unset +
                  (can_switch ? " or set path=" + other : std::string()));
  }
  return Status::success();
}

// A gemv option set (not auto, not its default or off value) where the rest of the problem and config leave the kernel
// no use for it (cfg: what they resolved to): it was dropped without a word, so it is refused naming it, what the
// problem and config resolved to and what to change. test_gemm_dequant sets each where it cannot apply.
Status ignored_gemv_option(const Values& p, const Values& c, const GemmDequantGemvConfig& cfg) {
  const bool fp4 = cfg.wtype == dequant4::kFp4;
  if (c.text("sums_once") == "on" && !cfg.tile_loop) {
    const std::string why = cfg.stream           ? "schedule=stream deals the tiles itself"
                            : cfg.cluster_reduce ? (c.text("reduce") == "cluster" ? "reduce=cluster"
                                                                                  : "reduce=auto takes cluster sums at M=" +
                                                                                        p.text("M") + " of this N and K") +
                                                       std::string(" keeps one tile a CTA")
                            : c.integer("tile_rounds") != 0 ? "tile_rounds=" + c.text("tile_rounds")
                                                            : "tile_rounds=auto takes 1 at M=" + p.text("M") + " of this N and K";
    return refuse("sums_once=on counts a CTA's row tiles' arrivals together at its end, which needs several row tiles a "
                  "CTA; here each CTA holds one (" + why + "): leave sums_once at auto or off" +
                  (cfg.stream ? std::string() : ", or set tile_rounds=2 (with reduce=global or auto)"));
  }
  if (c.text("scale_copy") == "smem" && cfg.scale_smem == 0) {
    const std::string why =
        !cfg.step_scale ? (c.text("step_scale") == "auto" ? std::string("step_scale=auto is off for this problem")
                                                          : "step_scale=" + c.text("step_scale")) +
                              ": each code is scaled as it is converted, so there are no step scales to copy; set "
                              "step_scale=on (group 128)"
        : cfg.stream ? std::string("schedule=stream copies no activations with a CTA's k split; set schedule=split")
                     : "a row's " + std::to_string(tiles(p.integer("K"), cfg.group)) + " " +
                           (cfg.scale_f32 ? "f32" : "bf16") + " scales (K=" + p.text("K") +
                           ") are not whole 16-byte chunks: K a multiple of " + (cfg.scale_f32 ? "512" : "1024") +
                           " needed";
    return refuse("scale_copy=smem copies a CTA's step scales into shared memory beside its activations; " + why +
                  ", or leave scale_copy at auto or regs");
  }
  if (c.integer("stage_rounds") != 0 && cfg.stage_async)
    return refuse("stage_rounds=" + c.text("stage_rounds") + " sets the register staging's rounds of activation loads "
                  "(stage_copy=regs); this problem's CTAs stage by " + (cfg.stage_tma ? "TMA" : "cp.async") + " (" +
                  (c.text("stage_copy") == "auto"
                       ? std::string("stage_copy=auto takes ") + (cfg.stage_tma ? "tma" : "async") + " at M=" + p.text("M")
                       : "stage_copy=" + c.text("stage_copy")) +
                  "), all in flight at once: leave stage_rounds at 0 or set stage_copy=regs");
  if (c.text("int4_lop3") == "on" && (fp4 || cfg.group_sum))
    return refuse(std::string("int4_lop3=on converts int4 code pairs with one LOP3; ") +
                  (fp4 ? "this problem has fp4 weights" : "group_sum=true converts them by its own LOP3 (bias left in)") +
                  ": leave int4_lop3 at auto or off" + (fp4 ? std::string() : ", or set group_sum=false"));
  if (!c.boolean("fp4_fold") && (!fp4 || cfg.scale_f32 || cfg.step_scale))
    return refuse(std::string("fp4_fold=false trades the folded conversion of fp4 codes with bf16 scales for "
                              "dequant4's; ") +
                  (!fp4 ? "this problem has int4 weights"
                   : cfg.scale_f32 ? "this problem has f32 scales"
                                   : "step_scale=on converts the codes without their scale") +
                  ", which the folded one does not serve: leave fp4_fold at true");
  return Status::success();
}

Status check_dequant(const Values& p, const Values& c, const DeviceLimits& limits) {
  if (p.integer("K") % 32 != 0)
    return refuse("K=" + p.text("K") + " is not a multiple of 32: a row of W is K/2 bytes and TMA copies rows in "
                  "16-byte units; pad K to a multiple of 32 (zero codes add nothing)");
  if (c.text("path") == "gemv" && p.integer("M") > 16)
    return refuse("path=gemv takes M <= 16 (its activations are mma.sync's 8- or 16-wide N); M=" + p.text("M") +
                  " needs path=wgmma (or auto)");
  if (Status st = other_path_option(p, c, gemv_path(p, c)); !st.ok()) return st;
  if (gemv_path(p, c)) {
    const GemmDequantGemvConfig cfg = gemv_config(p, c);
    if (cfg.stream && cfg.cluster_reduce)
      return refuse("reduce=cluster is schedule=split's (a row tile's split CTAs form the cluster); schedule=stream adds "
                    "its partial sums through global memory: leave reduce at auto or global");
    if (c.integer("tile_rounds") > 1 && (cfg.stream || c.text("reduce") == "cluster"))
      return refuse("tile_rounds=" + c.text("tile_rounds") + " is schedule=split's with global sums (a CTA loops over "
                    "row tiles of one k split): leave schedule at split and reduce at auto or global, or set "
                    "tile_rounds=1");
    if (cfg.stage_async && !cfg.permuted)
      return refuse("stage_copy=" + c.text("stage_copy") + " needs the kernel's own copy of the weights (weight_layout=permuted or auto), whose "
                    "codes it stores in nibble-pair order so the activations go to shared memory as they are: leave "
                    "weight_layout at auto or set stage_copy=regs");
    if (cfg.stage_tma && !tma_staging_fits(cfg))
      return refuse("stage_copy=tma copies each step's activations as a TMA box into the split schedule's shared "
                    "memory: it needs schedule=split, reduce=global or auto, group_sum=false and the permuted weights; "
                    "else set stage_copy=async or auto");
    if (cfg.act_multicast > 1) {
      const GemvGrid grid = gemv_grid(p, c, limits);
      if (!cfg.stage_tma || grid.x % cfg.act_multicast != 0)
        return refuse("act_multicast=" + c.text("act_multicast") + " copies a k split's activations by TMA multicast "
                      "into clusters of that many row-tile CTAs: it needs stage_copy=tma and a grid of row tiles (" +
                      std::to_string(grid.x) + " here) that it divides; else set act_multicast=1");
    }
    if (c.boolean("group_sum") && !cfg.group_sum)
      return refuse("group_sum=true converts int4 codes in groups of 128 k (a step's one scale); this problem has " +
                    p.text("wtype") + " weights in groups of " + p.text("group") + ": leave group_sum at false");
    if (cfg.step_scale && cfg.group % kGemvStepK != 0)
      return refuse("step_scale=on scales each step's sums (128 k) once, which needs groups of whole steps; group=" +
                    p.text("group") + " gives a step several scales: set step_scale=off or auto (or group=128)");
    if (Status st = ignored_gemv_option(p, c, cfg); !st.ok()) return st;
    if (c.text("step_loop") == "unrolled" && cfg.unroll == 0)
      return refuse("step_loop=unrolled unrolls the split schedule's loop over a CTA's k steps, which needs "
                    "schedule=split, K a multiple of 128 (K=" + p.text("K") + ") and a split whose steps divide K's "
                    "128-k steps evenly in whole prefetch rounds (splits=" + c.text("splits") + ", prefetch=" +
                    c.text("prefetch") + "): set step_loop=auto or runtime, or splits=0");
    if (const std::int64_t by = c.text("step_unroll") == "auto" ? 0 : gemv_step_unroll(p, c, cfg);
        by != 0 && !gemv_rolls_by(by, cfg))
      return refuse("step_unroll=" + c.text("step_unroll") + " rolls the unrolled step loop into iterations of that "
                    "many steps, which needs the unrolled loop (step_loop=unrolled or its auto; here " +
                    (cfg.unroll == 0 ? std::string("the loop is the indexed one")
                                     : "a split of " + std::to_string(cfg.unroll) + " steps") +
                    ") and a multiple of prefetch (" + c.text("prefetch") + ") dividing the split's steps: set "
                    "step_unroll=auto or all");
    if (cfg.stream && c.integer("splits") != 0)
      return refuse("splits=" + c.text("splits") + " is schedule=split's; schedule=stream deals every row tile's k "
                    "steps over the CTAs itself: leave splits at 0");
    const GemvSplit split = gemv_split(p, c, limits);
    if (!cfg.stream && split.steps > gemv_max_steps(cfg))
      return refuse("splits=" + c.text("splits") + " leaves " + std::to_string(split.steps) + " steps of 128 k per CTA, "
                    "whose activations (" + std::to_string(split.steps * make_plan(cfg).step_bytes) + " bytes) do not fit "
                    "in the " + std::to_string(smem_share(cfg.min_blocks)) + " bytes of shared memory a CTA has: raise "
                    "splits to at least " +
                    std::to_string(tiles(tiles(p.integer("K"), kGemvStepK), gemv_max_steps(cfg))) + " (or 0 = auto)");
    return Status::success();
  }
  if (c.text("weight_layout") == "permuted")
    return refuse("weight_layout=permuted is path=gemv's (its lanes read the weights in 16-row tiles); path=wgmma reads "
                  "row-major weights by TMA: set path=gemv (M <= 16) or weight_layout=plain");
  if (c.integer("ctas_per_sm") > 2)
    return refuse("ctas_per_sm=" + c.text("ctas_per_sm") + " is gemv's (path=wgmma takes 1 or 2: its CTAs hold 256+ "
                  "threads of up to 168 registers)");
  const GemmDequantConfig cfg = dequant_config(p, c);
  if (tiles(p.integer("M"), cfg.block_M) > 65535)
    return refuse("M=" + p.text("M") + " makes " + std::to_string(tiles(p.integer("M"), cfg.block_M)) +
                  " tiles of block_M=" + std::to_string(cfg.block_M) + " rows, over the grid's 65535: raise block_M");
  const GemmDequantPlan plan = make_plan(cfg);
  if (cfg.threads() > 1024)
    return refuse("block_N=" + std::to_string(cfg.block_N) + " with k_split=" + std::to_string(cfg.k_split) + " is " +
                  std::to_string(cfg.consumers()) + " consumer warpgroups plus the producer, over 1024 threads: lower "
                  "k_split or block_N");
  if (!split_fits(cfg))
    return refuse("num_stages=" + std::to_string(cfg.num_stages) + " does not give each of k_split=" +
                  std::to_string(cfg.k_split) + " k lanes two stage slots of its own: use a multiple of k_split, at "
                  "least " + std::to_string(2 * cfg.k_split));
  if (cfg.ctas_per_sm == 2 && plan.bytes > smem_share(2))
    return refuse("ctas_per_sm=2 gives each CTA " + std::to_string(smem_share(2)) + " bytes of shared memory, and " +
                  std::to_string(cfg.num_stages) + " stages need " + std::to_string(plan.bytes) +
                  ": lower num_stages or block_M, or set ctas_per_sm=1");
  if (plan.bytes > limits.smem_per_block_optin)
    return refuse(std::to_string(cfg.num_stages) + " stages of " + std::to_string(cfg.block_M) + "x" + c.text("block_K") +
                  " bf16 activations + " + std::to_string(cfg.block_N) + "x" + c.text("block_K") + " 4-bit weights need " +
                  std::to_string(plan.bytes) + " bytes of shared memory, over " + limits.arch + "'s " +
                  std::to_string(limits.smem_per_block_optin) + " per block: lower num_stages, block_K or block_M");
  return Status::success();
}

// The value the kernel feeds the tensor cores for weight (n, k): bf16(code * scale), the product taken in f32 (exact
// for bf16 scales; the f32 product the kernel rounds for f32 scales).
// pairs: W is the gemv path's W_pairs (stage_copy=async: the permuted layout in nibble-pair order), else row-major.
double dequantized(const HostTensor& W, const HostTensor& S, bool fp4, std::int64_t K, std::int64_t KG,
                   std::int64_t group, std::int64_t n, std::int64_t k, bool pairs = false) {
  const std::int64_t nibble = pairs ? gemv_pairs_nibble_at(n, k, static_cast<int>(tiles(K, kGemvStepK))) : 0;
  const std::uint8_t code = pairs ? static_cast<std::uint8_t>(W.data[static_cast<std::size_t>(nibble / 2)] >> (4 * (nibble % 2)) & 0xF)
                                  : num::packed4_code(W.data.data() + n * (K / 2), static_cast<std::uint64_t>(k));
  const float v = fp4 ? num::fp4_e2m1_value(code) : static_cast<float>(num::int4_value(code));
  const float s = static_cast<float>(S.at(n * KG + k / group));
  return num::bf16_to_float(num::float_to_bf16(v * s));
}

Result<std::vector<double>> dequant_reference(const Values& p, const ReferenceInputs& in, const std::string&,
                                              const std::vector<std::int64_t>& idx) {
  const std::int64_t N = p.integer("N"), K = p.integer("K"), group = p.integer("group"), KG = k_groups(p);
  const bool fp4 = p.text("wtype") == "fp4";
  // stage_copy=async's kernel reads W_pairs, whose codes are the logical W (no plain W is made for it).
  const bool pairs = in.tensors.count("W_pairs") != 0;
  const HostTensor &A = in.tensor("A"), &W = in.tensor(pairs ? "W_pairs" : "W"), &S = in.tensor("scales");
  std::vector<double> out;
  out.reserve(idx.size());
  for (auto i : idx) {
    const std::int64_t m = i / N, n = i % N;
    double total = 0;
    for (std::int64_t k = 0; k < K; ++k) total += A.at(m * K + k) * dequantized(W, S, fp4, K, KG, group, n, k, pairs);
    out.push_back(total);
  }
  return out;
}

// Problems of `tilelab test`: M, N and K that are no tile multiple (N 200 and 130 end inside a consumer's 64 rows,
// K 96 and 224 inside a group and a stage; K 160 ends 32 k into gemv's second 128-k step and inside a group), decode
// (gemv, M <= 16, odd ones and both n-tile counts, one large enough for auto's tile_rounds) and prefill-like M, both
// weight types, every group and scale type.
std::vector<std::map<std::string, std::string>> dequant_test_problems(bool full) {
  using KV = std::map<std::string, std::string>;
  auto pr = [](const char* m, const char* n, const char* k, const char* wtype, const char* group, const char* sd) {
    return KV{{"M", m}, {"N", n}, {"K", k}, {"wtype", wtype}, {"group", group}, {"scale_dtype", sd}};
  };
  std::vector<KV> s = {{{"M", "1"}, {"N", "256"}, {"K", "512"}},
                       pr("5", "200", "224", "fp4", "32", "f32"),
                       pr("17", "130", "96", "int4", "64", "f32"),
                       pr("100", "64", "32", "fp4", "128", "bf16"),
                       pr("257", "300", "1056", "int4", "32", "bf16"),
                       pr("16", "1000", "4128", "fp4", "64", "bf16"),
                       pr("7", "333", "160", "int4", "128", "f32"),
                       pr("12", "517", "2080", "fp4", "128", "bf16"),
                       pr("3", "77", "640", "int4", "64", "f32"),
                       pr("9", "250", "1184", "int4", "32", "bf16"),
                       pr("15", "129", "416", "fp4", "128", "f32"),
                       // A decode shape auto gives two row tiles a CTA (tile_rounds: N > K, the one-tile grid of 224 x
                       // 7 CTAs over two waves), its last tile partial.
                       pr("11", "28600", "8192", "int4", "128", "bf16")};
  if (full) {
    // Each format at a gemv M (13: two n tiles, odd) and a wgmma one (33).
    for (const char* w : {"int4", "fp4"})
      for (const char* g : {"32", "64", "128"})
        for (const char* sd : {"bf16", "f32"})
          for (const char* m : {"13", "33"}) s.push_back(pr(m, "190", "608", w, g, sd));
    for (const char* m : {"2", "3", "8", "9", "15"}) s.push_back(pr(m, "71", "96", "int4", "32", "bf16"));
    s.insert(s.end(), {pr("1", "4096", "4096", "int4", "128", "bf16"), pr("600", "520", "2080", "fp4", "32", "f32")});
  }
  return s;
}

KernelSpec gemm_dequant_spec() {
  KernelSpec k;
  k.name = "gemm.dequant";
  k.family = "gemm";
  k.tensor_cores = true;
  k.summary = "Hopper bf16 x 4-bit weights (int4 / fp4 e2m1, group scales): C^T = dequant(W) A^T with the weights "
              "dequantized in registers as wgmma's A operand, activations by TMA (C = A * dequant(W)^T)";
  k.source = "gemm/gemm_dequant.cuh";
  k.min_cc = 90;
  k.archs = {"sm_90a"};
  k.problem = dequant_problem();
  k.config = {{ParamSpec::enumeration("path", "auto", {"auto", "gemv", "wgmma"},
                                     "wgmma: weights dequantized into wgmma's A operand (any M); gemv: each lane "
                                     "streams its own weight bytes into mma.sync, split over K (M <= 16); auto: gemv "
                                     "for M <= 8, and for M <= 16 where wgmma's grid fills under 90% of its last "
                                     "wave or gemv's one-tile grid takes over two waves (where each measured faster), "
                                     "else wgmma"),
               ParamSpec::one_of("block_N", 0, {0, 64, 128},
                                 "weight rows (columns of C) per tile: 64 per consumer warpgroup; 0 = auto: 64 for M "
                                 "<= 64, else 128"),
               ParamSpec::one_of("block_M", 0, {0, 16, 32, 64, 128, 256},
                                 "activation rows (rows of C) per tile, wgmma's N; 0 = auto: the smallest of 16, 32, "
                                 "64 that holds M, else 256"),
               ParamSpec::one_of("block_K", 128, {64, 128, 256}, "k per pipeline stage"),
               ParamSpec::one_of("num_stages", 0, {0, 2, 3, 4, 5, 6, 8, 10, 12, 16},
                                 "TMA pipeline depth; 0 = auto: the most up to 8 that fit the shared memory"),
               ParamSpec::one_of("ctas_per_sm", 0, {0, 1, 2, 3, 4},
                                 "CTAs sharing an SM (a thread's registers capped for them): wgmma 1 (the consumers "
                                 "get 232 registers by setmaxnreg) or 2, 0 = auto: 2 for block_M <= 32 with block_N 64 "
                                 "and no k_split; gemv 1-4, 0 = auto: 4 for warp_rows 16 (64 registers; at M 9-16 3 "
                                 "where one row tile a CTA takes over two waves and N <= K: 80 registers, int4 "
                                 "1.09x at 8192 x 28672 on an H100 with int4_lop3, fp4 1.14-1.16x on an H200), 2 "
                                 "for 32"),
               ParamSpec::enumeration("scale_feed", "auto", {"auto", "smem", "regs"},
                                      "wgmma: how a consumer gets its scales: smem = the producer warpgroup stages "
                                      "each k block's in shared memory (one shared load per row a stage); regs = each "
                                      "consumer thread loads its rows' from global memory into a ring of registers, "
                                      "stages ahead; auto = regs for k_split > 1 with one scale group a stage, else "
                                      "smem"),
               ParamSpec::one_of("k_split", 0, {0, 1, 2, 4},
                                 "consumer warpgroups per 64 weight rows, taking the k blocks in turn (their partial "
                                 "sums added at the end); 0 = auto: 2 for block_M <= 32 with block_N 64, else 1"),
               ParamSpec::integer("splits", 0, 0, 1024,
                                  "gemv: CTAs per row tile over K (each ceil(K/128 / splits) steps of 128 k; the "
                                  "last adds the partial sums); 0 = auto: the fewest that fill the SMs in whole waves "
                                  "(step_loop=unrolled: whose steps divide K's; int4 M 8 with N > K twice those, "
                                  "1.00-1.02x on an H100)"),
               ParamSpec::one_of("tile_rounds", 0, {0, 1, 2, 3, 4, 6, 8},
                                 "gemv, schedule split: row tiles per CTA (x, x + grid columns, ...) over its k split, "
                                 "the split's activations staged once for all of them (a grid of ceil(row tiles / "
                                 "tile_rounds) columns; each tile's sums go out while the next tile's weights load); "
                                 "0 = auto: 2 for int4 at M 9-16 with N > K where one tile a CTA would take over "
                                 "two waves (where it measured faster; fp4 there 1.01-1.03x faster with one on an "
                                 "H200), else 1"),
               ParamSpec::enumeration("sums_once", "auto", {"auto", "on", "off"},
                                      "gemv, tile_rounds > 1: on = at a CTA's end its row tiles' arrivals counted "
                                      "together (one fence and barrier) and the tiles it finishes last added "
                                      "together; off = one tile after another; auto = on for int4 (1.05-1.06x at M "
                                      "9-16 of 28672 x 8192 on an H100), off for fp4 (0.97x there: its build spills); on is refused "
                                      "where a CTA holds one row tile"),
               ParamSpec::enumeration("step_loop", "auto", {"auto", "runtime", "unrolled"},
                                      "gemv, schedule split: runtime = the main loop indexes a CTA's k steps at run "
                                      "time (each step's shared-memory addresses, scale slot and tile bookkeeping "
                                      "computed in the loop); unrolled = the split's steps known when compiled (a "
                                      "split whose steps divide K's 128-k steps in whole prefetch rounds: needs K a "
                                      "multiple of 128) and the loop over a row tile's steps unrolled, every address "
                                      "an immediate off one base a tile; auto = unrolled (where such a split "
                                      "exists) for fp4 at M 9-16 where one row tile a CTA takes over two waves and "
                                      "for int4 with N > K at M 1 and 8-12 (1.01-1.08x at 28672 x 8192 and fp4 "
                                      "8192 x 28672 on an H100) and for int4 group 128 at M 9-16 where a CTA holds "
                                      "one row tile at 3 CTAs an SM (8192 x 28672: with batch off and the step scales "
                                      "in shared memory 1.02-1.07x the indexed loop), for int4 at M <= 8 wherever "
                                      "the indexed loop's own split can be unrolled (1.09-1.14x at M 1-8 of both "
                                      "decode shapes on an H200) and, rolled by step_unroll's "
                                      "auto, for int4 group 128 at M 13-16 with N > K (1.13-1.14x the indexed loop on "
                                      "an H200), else runtime"),
               ParamSpec::enumeration("step_unroll", "auto", {"auto", "all", "2", "4", "8"},
                                      "gemv, the unrolled step loop (step_loop unrolled or its auto): all = a row "
                                      "tile's split steps all unrolled; S = rolled into a loop of S steps an iteration, "
                                      "the last one peeled (a multiple of prefetch dividing the split: each "
                                      "iteration's addresses immediates off one base, no per-step bounds, a loop body "
                                      "S steps long instead of the whole split's); auto = 2 for int4 group 128 at M "
                                      "9-16 on the deep grids with two row tiles a CTA (28672 x 8192, where step_loop's "
                                      "auto then unrolls M 13-16 too) or one tile (8192 x 28672): 1.04-1.14x on an "
                                      "H200; else all (fp4 0.98-0.99x, int4 M 8 0.94x)"),
               ParamSpec::one_of("warp_rows", 16, {16, 32},
                                 "gemv: weight rows per warp (8 warps per CTA); 32 reads each activation fragment "
                                 "for two 16-row blocks but needs twice the registers"),
               ParamSpec::one_of("prefetch", 2, {1, 2, 3, 4, 6, 8},
                                 "gemv: 128-k steps of weights each lane has loaded ahead (16-byte loads in flight: "
                                 "prefetch x warp_rows / 8)"),
               ParamSpec::boolean("l2_prefetch", false,
                                  "gemv: each weight load also asks the L2 for the 256 bytes around it"),
               ParamSpec::enumeration("schedule", "split", {"split", "stream"},
                                      "gemv: split = a grid of row tiles x `splits` over K; stream = a persistent "
                                      "grid (one wave of CTAs) dealing every (row tile, k chunk) pair evenly, a CTA "
                                      "going from one tile's steps straight to the next's (k chunk: `prefetch` steps "
                                      "with batch, else one)"),
               ParamSpec::enumeration("int4_lop3", "auto", {"auto", "on", "off"},
                                      "gemv, int4: on = each code pair's mask and bias in one LOP3 (the bias in a "
                                      "register) instead of an AND and an XOR; auto = on for M <= 8 (one n tile) and "
                                      "at M 9-16 where one row tile a CTA takes over two waves and the CTA then holds "
                                      "two row tiles (tile_rounds) or is one of 3 an SM (ctas_per_sm): 1.04-1.05x at "
                                      "28672 x 8192 on an H100; elsewhere at M 9-16 its register costs spills); on is refused for "
                                      "fp4 and with group_sum"),
               ParamSpec::boolean("fp4_fold", true,
                                  "gemv, fp4 with bf16 scales: the wgmma path's conversion (a mask, a multiply and a "
                                  "mask a pair), 2^126 folded into the scales and 2^32 into the stored sums; false = "
                                  "dequant4's conversion and a second multiply (refused for int4, f32 scales and "
                                  "step_scale=on, which never fold)"),
               ParamSpec::boolean("group_sum", false,
                                  "gemv, int4 with group 128: each code pair converted by one LOP3 with its +136 "
                                  "bias left in (no subtraction, no scale multiply), each step's mma.sync sums "
                                  "started at -136 x the step's activation sums and scaled once by one FFMA a sum "
                                  "(the weights are then not rounded to bf16(code x scale)); refused for fp4 and "
                                  "groups 32 and 64"),
               ParamSpec::enumeration("step_scale", "auto", {"auto", "on", "off"},
                                      "gemv, group 128 (int4 or fp4; a 128-k step's one scale): on = the codes "
                                      "converted without the scale (no HMUL2 a pair), each step's mma.sync sums "
                                      "started at zero and scaled once by one FFMA a sum (the weights are then not "
                                      "rounded to bf16(code x scale)); refused for groups 32 and 64; auto = on for "
                                      "int4 group 128 at M 9-16 where one row tile a CTA takes over two waves: "
                                      "1.01-1.03x at 28672 x 8192 and 8192 x 28672 on an H100; under two waves "
                                      "0.98x, fp4 0.99x"),
               ParamSpec::enumeration("scale_copy", "auto", {"auto", "regs", "smem"},
                                      "gemv, where step_scale is on (split schedule, K a "
                                      "multiple of 1024 with bf16 scales, 512 with f32; smem refused elsewhere): regs = each "
                                      "step's scales loaded with its weights, `prefetch` steps ahead, into registers; "
                                      "smem = the CTA's step scales copied into shared memory with the activations "
                                      "(cp.async) and read by each step's closing FFMAs (no scale registers or "
                                      "pointers in the loop); auto = smem for int4 where a CTA holds two row tiles "
                                      "and the scales' room leaves the split as it is (1.01-1.03x at 28672 x 8192 "
                                      "M 9-16 on an H100) and where step_loop's auto unrolls one int4 row tile a CTA "
                                      "(8192 x 28672 M 9-16), else regs (with the indexed loop and stage_copy=tma "
                                      "smem measured 0.94-0.99x)"),
               ParamSpec::enumeration("reduce", "auto", {"auto", "global", "cluster"},
                                      "gemv, schedule split: how a row tile's split CTAs add their partial sums: "
                                      "global = f32 partials in global memory, added by the last CTA to finish; "
                                      "cluster = the split CTAs are one thread-block cluster (up to 16; more splits "
                                      "go through global memory) adding them through distributed shared memory; "
                                      "auto = cluster for splits of 2-4 at M <= 4 where the grid is one wave at most "
                                      "(a later wave waits for four free slots on one GPC; over a wave global sums "
                                      "measured 1.07-1.10x at 28672 x 8192 M 1 on an H200), else global"),
               ParamSpec::one_of("stage_rounds", 0, {0, 1, 2, 4, 8},
                                 "gemv: 16-byte activation chunks each thread has in flight while its CTA stages "
                                 "them into shared memory (stage_copy=regs; refused beside async or tma staging); 0 = auto: 2 "
                                 "for M <= 8, 1 for M 9-16"),
               ParamSpec::enumeration("stage_copy", "auto", {"auto", "regs", "async", "tma"},
                                      "gemv: how a CTA stages its activations: regs = `stage_rounds` rounds of 16-byte "
                                      "loads through registers, each chunk put in the weights' pair order; async = the "
                                      "weights' codes stored in nibble-pair order (the tensor W_pairs: needs the "
                                      "permuted layout), so every chunk is copied as it is by cp.async through the L1, "
                                      "all in flight at once (after the first weights' loads, or before them with "
                                      "act_first); tma = async's weights, each step's activations one TMA box (one "
                                      "thread issues them, one mbarrier a step that the step's first mma waits on; "
                                      "split schedule); auto = async at M >= 8 (split schedule, "
                                      "permuted weights, no "
                                      "group_sum): on an H100 1.03-1.05x at M 8 and 16 (28672 x 8192), M 8 of 8192 x "
                                      "28672, even at M 16 there, 1.01x at M 4 and 0.99x at M 1; below M 8 too where "
                                      "the grid is over one wave (1.01-1.06x at M 1-4 of the two decode shapes on an "
                                      "H200); tma at group 128 on "
                                      "the deep M 9-16 grids where a CTA holds one int4 row tile (1.03-1.05x on an "
                                      "H100), with the unrolled loop there (step_loop auto or unrolled) async at M 9 "
                                      "and tma at M 10-16 (each M's timed build); fp4 there async (1.03-1.12x tma's "
                                      "since the unrolled loop)"),
               ParamSpec::one_of("act_multicast", 0, {0, 1, 2, 4},
                                 "gemv, stage_copy=tma: the row-tile CTAs of one k split in clusters of this many, each "
                                 "step's activations copied once a cluster by TMA multicast (1: each CTA its own); 0 = "
                                 "auto: 2 where stage_copy=auto takes tma (an even row-tile count; with the "
                                 "unrolled loop only at M 10-12, as timed), else 1"),
               ParamSpec::enumeration("act_first", "auto", {"auto", "on", "off"},
                                      "gemv: on = a CTA asks for its first round of activations before its first "
                                      "weights (off: after them, behind the launch's burst of weight loads); auto = on "
                                      "for M <= 8 (where it measured faster)"),
               ParamSpec::enumeration("batch", "auto", {"auto", "on", "off"},
                                      "gemv: on = a lane issues its `prefetch` steps' weight loads together "
                                      "once it has used them all (a row's prefetch x 64 contiguous bytes, whole "
                                      "128-byte lines, asked for at once), off = one step's after each step; auto = on "
                                      "for M <= 8, for int4 at M 9-16 where a CTA holds one row tile staged by "
                                      "TMA with the indexed loop (step_loop=runtime), for int4 group 128 at two row "
                                      "tiles a CTA with the indexed loop (28672 x 8192 M 13-16: 1.02-1.03x) and for "
                                      "fp4 group 128 at M 9-12 with one row tile a CTA on a deep grid (8192 x 28672, "
                                      "1.00-1.02x), where it measured faster"),
               ParamSpec::enumeration("weight_layout", "auto", {"auto", "plain", "permuted"},
                                      "how the kernel reads W: plain = row-major [N, K/2]; permuted (gemv only) = in "
                                      "tiles of 16 rows x 64 bytes (one 128-k step), a row block's steps one after "
                                      "another, so each warp load is one contiguous 512-byte run (the tensor W_tiles, "
                                      "filled from the same logical W the reference reads); auto = permuted on the "
                                      "gemv path (where it measured faster), plain on wgmma")}};
  k.can_implement = check_dequant;
  k.test_problems = dequant_test_problems;
  k.test_configs = [] {
    return std::vector<std::map<std::string, std::string>>{
        {{"block_N", "64"}, {"block_M", "256"}, {"num_stages", "2"}},
        {{"block_M", "16"}, {"block_K", "64"}},
        {{"block_N", "128"}, {"block_M", "64"}, {"block_K", "256"}, {"num_stages", "2"}},
        {{"block_N", "64"}, {"block_M", "32"}, {"block_K", "256"}, {"ctas_per_sm", "2"}},
        {{"block_M", "16"}, {"ctas_per_sm", "1"}, {"k_split", "1"}},
        {{"block_M", "16"}, {"ctas_per_sm", "2"}, {"k_split", "1"}},
        {{"block_N", "128"}, {"block_M", "32"}, {"k_split", "2"}, {"num_stages", "4"}},
        {{"path", "wgmma"}, {"block_M", "16"}, {"k_split", "1"}},
        // Each scale feed where auto picks the other: the register ring at prefill tiles, staged scales split.
        {{"path", "wgmma"}, {"scale_feed", "regs"}},
        {{"path", "wgmma"}, {"scale_feed", "smem"}, {"block_M", "32"}, {"k_split", "2"}},
        {{"splits", "1"}},
        {{"splits", "3"}},
        {{"warp_rows", "32"}, {"prefetch", "1"}},
        {{"prefetch", "4"}, {"ctas_per_sm", "3"}},
        // Batched loads at every M, in odd splits and deeper; the plain feed where auto batches.
        {{"path", "gemv"}, {"batch", "on"}, {"splits", "3"}},
        {{"path", "gemv"}, {"batch", "on"}, {"prefetch", "4"}, {"ctas_per_sm", "3"}},
        {{"path", "gemv"}, {"batch", "off"}},
        // The persistent schedule with and without batched chunks; each conversion where auto picks the other.
        {{"path", "gemv"}, {"schedule", "stream"}},
        {{"path", "gemv"}, {"schedule", "stream"}, {"batch", "off"}},
        {{"path", "gemv"}, {"fp4_fold", "false"}},
        {{"path", "gemv"}, {"int4_lop3", "off"}},
        {{"path", "gemv"}, {"int4_lop3", "on"}},
        {{"path", "gemv"}, {"group_sum", "true"}},
        {{"path", "gemv"}, {"step_scale", "on"}},
        {{"path", "gemv"}, {"step_scale", "off"}},
        {{"path", "gemv"}, {"step_scale", "on"}, {"scale_copy", "smem"}},
        {{"path", "gemv"}, {"step_scale", "on"}, {"scale_copy", "smem"}, {"tile_rounds", "2"}},
        {{"path", "gemv"}, {"group_sum", "true"}, {"warp_rows", "32"}, {"schedule", "stream"}},
        // Split sums added in a cluster (the problems' auto splits run 2-16 as clusters, more through global memory),
        // with two row blocks and an odd cluster, and through global memory where auto takes a cluster; deeper staging
        // rounds; the weights' first loads before the activations'.
        {{"path", "gemv"}, {"reduce", "cluster"}},
        {{"path", "gemv"}, {"reduce", "cluster"}, {"splits", "3"}, {"warp_rows", "32"}},
        {{"path", "gemv"}, {"reduce", "global"}, {"splits", "2"}},
        {{"path", "gemv"}, {"stage_rounds", "4"}},
        {{"path", "gemv"}, {"act_first", "off"}},
        {{"path", "gemv"}, {"act_first", "on"}},
        // Two row tiles a CTA with their sums counted one tile after another.
        {{"path", "gemv"}, {"tile_rounds", "2"}, {"sums_once", "off"}},
        // The loop unrolled over a tile's steps: two row tiles a CTA, batched loads of a deeper ring.
        {{"path", "gemv"}, {"step_loop", "unrolled"}, {"tile_rounds", "2"}},
        {{"path", "gemv"}, {"step_loop", "unrolled"}, {"batch", "on"}, {"prefetch", "4"}, {"ctas_per_sm", "3"}},
        // The permuted weights (auto's on gemv) with two row blocks in an odd split; the row-major ones where auto
        // permutes, also with group_sum and unbatched loads.
        {{"path", "gemv"}, {"weight_layout", "permuted"}, {"splits", "3"}, {"warp_rows", "32"}},
        {{"path", "gemv"}, {"weight_layout", "plain"}},
        {{"path", "gemv"}, {"group_sum", "true"}, {"weight_layout", "plain"}, {"batch", "off"}},
        // Several row tiles per CTA (a last column with fewer tiles where they do not divide), batched and not,
        // with two row blocks and the row-major weights.
        {{"path", "gemv"}, {"tile_rounds", "2"}},
        {{"path", "gemv"}, {"tile_rounds", "3"}, {"splits", "3"}, {"batch", "on"}},
        {{"path", "gemv"}, {"tile_rounds", "2"}, {"warp_rows", "32"}, {"weight_layout", "plain"}},
        // The activations copied as they are (the weights in nibble-pair order): after and before the first weights,
        // with two row blocks in an odd split, with several row tiles a CTA, and in the persistent schedule.
        {{"path", "gemv"}, {"stage_copy", "async"}},
        {{"path", "gemv"}, {"stage_copy", "async"}, {"group_sum", "true"}},
        {{"path", "gemv"}, {"stage_copy", "async"}, {"act_first", "on"}, {"splits", "3"}, {"warp_rows", "32"}},
        {{"path", "gemv"}, {"stage_copy", "async"}, {"act_first", "off"}, {"tile_rounds", "2"}},
        {{"path", "gemv"}, {"stage_copy", "async"}, {"schedule", "stream"}, {"batch", "off"}}};
  };
  k.flops = [](const Values& p) {
    return 2.0 * static_cast<double>(p.integer("M")) * static_cast<double>(p.integer("N")) * static_cast<double>(p.integer("K"));
  };
  // Weight bytes + scales + A + C: what a decode shape's bandwidth is counted on.
  k.min_bytes = [](const Values& p) {
    const double M = static_cast<double>(p.integer("M")), N = static_cast<double>(p.integer("N")),
                 K = static_cast<double>(p.integer("K"));
    const double scale_bytes = p.text("scale_dtype") == "f32" ? 4.0 : 2.0;
    return N * K / 2 + N * static_cast<double>(k_groups(p)) * scale_bytes + 2 * M * K + 2 * M * N;
  };
  k.reference = dequant_reference;
  // Against the float64 sum over the weights the kernel saw (bf16-rounded dequantized values): the f32
  // accumulation's rounding and the bf16 output's (2^-9 relative); a scale from the wrong group or row, a wrong code
  // or a swapped nibble changes entries by their whole size.
  k.tolerance = [](const Values&, DType) { return Tolerance{1e-2, 0.0}; };
  k.probes = gemm_dequant_probe_names();
  // The gemv path's regions follow the wgmma path's (their ids after GemmDequantGemvProbe::kLastWgmma).
#define TL_GEMV_PROBE_COUNT(name) +1
  static_assert(0 TL_GEMM_DEQUANT_PROBES(TL_GEMV_PROBE_COUNT) == GemmDequantGemvProbe::kLastWgmma + 1,
                "the gemv probes' ids start after the wgmma path's");
#undef TL_GEMV_PROBE_COUNT
  for (const std::string& name : TL_PROBE_NAMES(TL_GEMM_DEQUANT_GEMV_PROBES)) k.probes.push_back(name);
  k.probe_capacity = [](const Values& p, const Values& c, const DeviceLimits&) {
    return static_cast<std::uint32_t>(4 * tiles(p.integer("K"), c.integer("block_K")) + 64);
  };
  k.name_expression = [](const Values& p, const Values& c) {
    return gemv_path(p, c) ? name_expression(gemv_config(p, c)) : name_expression(dequant_config(p, c));
  };
  k.launch = [](const Values& p, const Values& c, const DeviceLimits& limits) {
    if (gemv_path(p, c)) {
      const GemmDequantGemvConfig cfg = gemv_config(p, c);
      const GemvGrid grid = gemv_grid(p, c, limits);
      LaunchGeometry g;
      g.grid.x = static_cast<std::uint32_t>(grid.x);
      g.grid.y = static_cast<std::uint32_t>(grid.y);
      g.block.x = static_cast<std::uint32_t>(cfg.threads());
      g.dynamic_smem =
          static_cast<std::uint32_t>(make_plan(cfg).bytes(static_cast<int>(grid.steps), cfg.cluster_reduce));
      g.cluster.y = static_cast<std::uint32_t>(gemv_cluster(c, cfg, grid));
      g.cluster.x = static_cast<std::uint32_t>(cfg.act_multicast);
      return g;
    }
    const GemmDequantConfig cfg = dequant_config(p, c);
    LaunchGeometry g;
    g.grid.x = static_cast<std::uint32_t>(tiles(p.integer("N"), cfg.block_N));
    g.grid.y = static_cast<std::uint32_t>(tiles(p.integer("M"), cfg.block_M));
    g.block.x = static_cast<std::uint32_t>(cfg.threads());
    g.dynamic_smem = static_cast<std::uint32_t>(make_plan(cfg).bytes);
    return g;
  };
  // Kernel signature: (tma_A, tma_W, scales, C, M, N, K); A and W are reached only through their tensor maps. A is
  // uniform in [-1, 1); W random bytes (every code of both nibbles); scales in [0.5, 2), so that a scale taken from
  // the wrong row or group shows.
  // gemv: (A, W, scales, C, partials, counters, M, N, K, split_steps); the partials [parts, M, N] f32 (parts: the most
  // CTAs that share a row tile) and a counter per row tile are scratch (the kernel leaves the counters at zero);
  // split_steps is the split schedule's (0 with stream).
  k.args = [](const Values& p, const Values& c, const DeviceLimits& limits) {
    const auto M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
    const DType sd = p.text("scale_dtype") == "f32" ? DType::f32 : DType::bf16;
    std::vector<ArgSpec> args = {ArgSpec::tensor("A", DType::bf16, {M, K}, ArgRole::in, {.lo = -1, .hi = 1, .seed = 1}),
                                 ArgSpec::tensor("W", DType::u8, {N, K / 2}, ArgRole::in, {.lo = 0, .hi = 256, .seed = 2})};
    if (gemv_path(p, c)) {
      const GemvGrid grid = gemv_grid(p, c, limits);
      const GemmDequantGemvConfig cfg = gemv_config(p, c);
      args.push_back(ArgSpec::tensor("scales", sd, {N, k_groups(p)}, ArgRole::in, {.lo = 0.5, .hi = 2, .seed = 3}));
      args.push_back(ArgSpec::tensor("C", DType::bf16, {M, N}, ArgRole::out));
      args.push_back(ArgSpec::tensor("partials", DType::f32, {grid.parts, M, N}, ArgRole::scratch));
      args.push_back(ArgSpec::tensor("counters", DType::i32, {tiles(N, cfg.rows())}, ArgRole::scratch));
      for (const char* name : {"M", "N", "K"})
        args.push_back(ArgSpec::scalar(name, DType::i32, static_cast<double>(p.integer(name))));
      args.push_back(ArgSpec::scalar("split_steps", DType::i32, cfg.stream ? 0.0 : static_cast<double>(grid.steps)));
      // The last parameter: stage_copy=tma's map of A as [M, K / 32, 32] (a step is a box of 32 k x 4 x 8 n_tiles
      // rows, 64-byte swizzled; rows past M and k past K zero-filled), else an unused int.
      if (cfg.stage_tma) {
        ArgSpec map = ArgSpec::tensor_map("act_map", "A", {32, 4, 8 * cfg.n_tiles}, swizzle_bytes(SmemSwizzle::b64));
        map.map_shape = {M, K / 32, 32};
        args.push_back(std::move(map));
      } else {
        args.push_back(ArgSpec::scalar("act_map", DType::i32, 0.0));
      }
      if (cfg.permuted) {
        // The kernel reads W_tiles: W's own fill (the same seed: byte for byte the logical W, which stays an
        // unread buffer and the reference's input) stored in the plan's tiles (gemv_permuted_at).
        ArgSpec tiled = ArgSpec::tensor("W_tiles", DType::u8, {tiles(N, kGemvTileRows), tiles(K, kGemvStepK),
                                                               kGemvTileRows, kGemvRowStepBytes}, ArgRole::in, args[1].fill);
        tiled.fill.tiles = {N, K / 2, kGemvTileRows, kGemvRowStepBytes};
        if (cfg.stage_async) {
          // W_pairs: the same bytes read with each word's codes in nibble-pair order (gemv_pairs_nibble_at), which
          // makes them another logical W than the plain fill's; the reference reads this one, so no W beside it.
          tiled.name = "W_pairs";
          args[1] = std::move(tiled);
          return args;
        }
        args[1].is_param = false;
        args.insert(args.begin() + 1, std::move(tiled));
      }
      return args;
    }
    const GemmDequantPlan plan = make_plan(dequant_config(p, c));
    args[0].is_param = args[1].is_param = false;
    args.push_back(ArgSpec::tensor_map("tma_A", "A", {plan.box_A.inner, plan.box_A.outer}, swizzle_bytes(SmemSwizzle::b128)));
    args.push_back(ArgSpec::tensor_map("tma_W", "W", {plan.box_W.inner, plan.box_W.outer}, 0));
    args.push_back(ArgSpec::tensor("scales", sd, {N, k_groups(p)}, ArgRole::in, {.lo = 0.5, .hi = 2, .seed = 3}));
    args.push_back(ArgSpec::tensor("C", DType::bf16, {M, N}, ArgRole::out));
    for (const char* name : {"M", "N", "K"})
      args.push_back(ArgSpec::scalar(name, DType::i32, static_cast<double>(p.integer(name))));
    return args;
  };
  // The stage's tiles as TMA writes them (one 64-k activation box, the packed weights), the register-sourced A
  // fragment the weights are dequantized into, and a consumer's accumulator (C^T: weight rows x activation rows).
  k.layouts = [](const Values& p, const Values& c) {
    if (gemv_path(p, c)) {
      // gemv: one step's activations as the lanes read them, and the mma.sync fragments (weights A, activations B).
      const GemmDequantGemvPlan plan = make_plan(gemv_config(p, c));
      std::vector<LayoutInfo> l = {{"smem_act", memory_spec(plan.smem_act, "bf16")}};
      for (const auto& [name, f, atom] : {std::tuple{"mma_W", plan.mma_A, "mma.m16n8k16.bf16.A"},
                                          std::tuple{"mma_act", plan.mma_B, "mma.m16n8k16.bf16.B"},
                                          std::tuple{"mma_C", plan.mma_C, "mma.m16n8k16.f32.C"}})
        if (auto spec = fragment_spec(f, atom)) l.push_back({name, *spec});
      return l;
    }
    const GemmDequantConfig cfg = dequant_config(p, c);
    const GemmDequantPlan plan = make_plan(cfg);
    std::vector<LayoutInfo> l = {{"smem_A", memory_spec(plan.smem_A, "bf16")}, {"smem_W", memory_spec(plan.smem_W, "u8")}};
    if (auto spec = fragment_spec(plan.frag_W, "wgmma.m64k16.bf16.A")) l.push_back({"frag_W", *spec});
    if (auto spec = fragment_spec(plan.acc, "wgmma.m64n" + std::to_string(cfg.block_M) + "k16.f32.C"))
      l.push_back({"wgmma_C", *spec});
    return l;
  };
  return k;
}

}  // namespace

std::vector<KernelSpec> gemm_dequant_kernels() { return {gemm_dequant_spec()}; }

}  // namespace tl
