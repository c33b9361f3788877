#!/usr/bin/env bash
# Writes the PTX of a fixed set of library kernel configurations (plain and probe builds) into OUT_DIR, one file per
# case, with what does not change the code removed (line info, comments, file names), so that a refactor of kernel
# sources can be shown to leave the code alone:
#   bash tests/perf/ptx_snapshot.sh build/tilelab /tmp/before-kernels /tmp/ptx-before   # e.g. `git archive` of main
#   bash tests/perf/ptx_snapshot.sh build/tilelab kernels /tmp/ptx-after
#   diff -r /tmp/ptx-before /tmp/ptx-after && echo identical
# ONLY=REGEX keeps the cases whose kernel name matches (extended regex); file names stay numbered as in the full list.
# The name expression comes from the binary's spec: when a change alters it (a template parameter that became a config
# struct), snapshot the old tree with the old tree's binary.
# Compiling needs no GPU (sm_90a); each case runs with its own empty cache so nothing stale is reused.
# ONLY=REGEX keeps the cases whose kernel name matches (file names keep their case numbers, so runs stay comparable).
set -euo pipefail
TILELAB=${1:?usage: ptx_snapshot.sh TILELAB KERNELS_DIR OUT_DIR}
KDIR=${2:?usage: ptx_snapshot.sh TILELAB KERNELS_DIR OUT_DIR}
OUT=${3:?usage: ptx_snapshot.sh TILELAB KERNELS_DIR OUT_DIR}
mkdir -p "$OUT"
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT

# kernel | config | problem
CASES=(
  "gemm.mma||"
  "gemm.mma|block_M=64,block_N=64,warps_M=2,warps_N=2,num_stages=2,swizzle=false|trans_B=false,out_dtype=f32"
  "gemm.mma|block_N=128,frag_buffers=1,early_sync=false,unroll_k=false,serpentine=false,min_blocks=2|dtype=f16"
  "gemm.wgmma||"
  "gemm.wgmma|block_M=64,block_N=128,num_stages=4,raster=n|trans_B=false"
  "gemm.wgmma|cluster_M=2|out_dtype=f32"
  "gemm.wgmma|cluster_N=2,tma_store=false|dtype=f16,N=1000"
  "gemm.wgmma|block_N=128,tma_store=true|out_dtype=f32"
  "attn.fwd.mma||"
  "attn.fwd.mma|block_M=128,block_N=32,warps=8,num_stages=3|dim=64,causal=true,varlen=true,heads_kv=4"
  "attn.fwd.wgmma||"
  "attn.fwd.wgmma|block_M=64,block_N=176,ping_pong=false,q_stages=1,epilogue=direct|dim=64,causal=true"
  "attn.fwd.wgmma|block_N=64,num_stages=3,q_stages=1,persistent=false,epilogue=smem|varlen=true,dtype=f16,heads_kv=4"
  "attn.fwd.mma|block_M=128,block_N=64,warps=8,num_stages=4|dtype=f16"
  "attn.fwd.wgmma||varlen=true,causal=true,dim=64"
  "attn.fwd.wgmma|block_M=64,block_N=64,ping_pong=false|causal=true"
  "mla.decode||"
  "mla.decode|qk_warpgroups=2,vec_store=false|causal=true,seq_q=2,heads=128,dtype=f16"
  "mla.decode||varlen=true,zero_lengths=true"
  "gemm.simt||"
  "mla.decode|qk_warpgroups=2|causal=true"
  "mla.decode|vec_store=false|dtype=f16,seq_q=2,heads=128"
  "copy||"
  "copy|vec=8,threads=128|dtype=bf16"
  "elementwise|vec=2|dtype=f16"
  "rmsnorm||"
  "rmsnorm|vec=8,threads=512,rows_per_block=4|dtype=bf16,cols=1000"
  "softmax||"
  "softmax|rows_per_block=2|cols=100000,dtype=f16"
  "test.oob||"
  "test.spin|threads=256|"
  "gemm.wgmma|cluster_M=2,block_N=128|trans_B=false,out_dtype=f16"
  "gemm.mma||trans_B=false"
  "gemm.mma|warps_M=4,warps_N=2|trans_B=false,out_dtype=f16"
  "gemm.mma|block_M=32,block_N=64,warps_M=1,warps_N=1|trans_B=false"
  "gemm.mma|swizzle=false,block_N=128|"
  "gemm.simt|block_M=64,block_N=32,block_K=16,thread_M=4,thread_N=2|dtype=bf16"
  "gemm.fp8||"
  "gemm.fp8|block_M=64,block_N=128,wgmma_N=64,num_stages=5|scaling=block,out_dtype=f32"
  "gemm.fp8|fast_accum=true,wgmma_N=256,tma_store=false|scaling=row,N=1000"
  "gemm.grouped||"
  "gemm.grouped|schedule=host,block_M=64,block_N=128|layout=masked,out_dtype=f32,N=1000"
  "gemm.grouped||dtype=e4m3"
  "mla.sparse_decode||"
  "mla.sparse_decode|crossover=false,qk_warpgroups=2|heads=64"
  "mla.sparse_prefill||seq_q=300,seq_kv=4096,topk=2048"
  "gemm.wgmma|schedule=stream_k|M=3000,N=5000"
  "gemm.dequant||"
  "gemm.dequant||M=4096,wtype=fp4,group=32,scale_dtype=f32"
  "gemm.dequant|k_split=1|M=1,group=64"
  "attn.bwd.wgmma||"
  "attn.bwd.wgmma||dim=64,causal=true,varlen=true,heads_kv=4"
  "attn.decode||"
  "gemm.dequant|path=gemv|M=4"
)
n=0
for c in "${CASES[@]}"; do
  IFS='|' read -r kernel config problem <<<"$c"
  for probe in "" "--timeline"; do
    n=$((n + 1))
    [[ -n "${ONLY:-}" && ! "$kernel" =~ $ONLY ]] && continue
    name=$(printf '%02d_%s%s' "$n" "$kernel" "${probe:+_probe}")
    args=(compile "$kernel" --kernels-dir "$KDIR" --cache-dir "$CACHE/$n" --ptx "$OUT/$name.raw")
    [ -n "$config" ] && args+=(--config "$config")
    [ -n "$problem" ] && args+=(--problem "$problem")
    [ -n "$probe" ] && args+=("$probe")
    if ! "$TILELAB" "${args[@]}" > "$OUT/$name.log" 2>&1; then
      echo "FAILED: $kernel config='$config' problem='$problem' $probe"; cat "$OUT/$name.log"; continue
    fi
    # line info, comments, the file table and the debug sections (names of inlined functions) are not code; NAMES=1
    # also replaces mangled names (a kernel whose template parameters changed form, e.g. to a config struct, keeps its
    # code but not its name)
    sed -E '/^\s*\.section\s+\.debug/,$d' "$OUT/$name.raw" | grep -v -E '^\s*(\.loc|\.file|//)' | sed -E 's/\s+$//' |
      if [ "${NAMES:-0}" = 1 ]; then sed -E 's/_Z[0-9A-Za-z_]+/_Z_NAME/g'; else cat; fi > "$OUT/$name.ptx"
    rm -f "$OUT/$name.raw" "$OUT/$name.log"
  done
done
echo "wrote $(ls "$OUT"/*.ptx | wc -l) PTX files to $OUT"
