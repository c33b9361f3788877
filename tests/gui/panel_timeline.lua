-- GUI screenshot script: the model timeline of gemm.wgmma's default config (no GPU needed).
gui.kernel("gemm.wgmma")
gui.problem{M = 1024, N = 1024, K = 1024}
gui.model_timeline()
gui.show("Timeline")
