# The kernels and shapes tests/perf/refactor_check_device.sh times before and after a kernel-source refactor
# (kernel | problem | config); sourced by it and by the cache prefill.
CASES=(
  "gemm.wgmma|M=8192,N=8192,K=8192|"
  "gemm.wgmma|M=4096,N=4096,K=4096|"
  "gemm.wgmma|M=4096,N=4096,K=512|block_N=128,num_stages=6,panel=8"
  "gemm.wgmma|M=4096,N=4096,K=4096,out_dtype=f32|"
  "gemm.wgmma|M=4096,N=4096,K=4096|cluster_M=2"
  "gemm.mma|M=8192,N=8192,K=8192|block_N=256,num_stages=3"
  "gemm.simt|M=4096,N=4096,K=4096|"
  "attn.fwd.wgmma|batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128|"
  "attn.fwd.wgmma|batch=16,seq_q=2048,seq_k=2048,heads=16,dim=128,causal=true|"
  "attn.fwd.wgmma|batch=16,seq_q=2048,seq_k=2048,heads=16,dim=64|"
  "attn.fwd.mma|batch=4,seq_q=8192,seq_k=8192,heads=16,dim=128|block_M=128,block_N=128,warps=8"
  "mla.decode|batch=128,seq_q=1,heads=64,seq_k=4096,varlen=true|"
  "mla.decode|batch=128,seq_q=2,heads=128,seq_k=8192,varlen=true,causal=true|"
  "softmax|rows=65536,cols=4096,dtype=bf16|"
  "rmsnorm|rows=65536,cols=4096,dtype=bf16|"
)
