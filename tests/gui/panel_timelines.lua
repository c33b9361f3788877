-- GUI screenshot script: two model timelines compared (no GPU needed): gemm.wgmma pinned as A, gemm.mma as B, on one
-- time window.
gui.kernel("gemm.wgmma")
gui.problem{M = 1024, N = 1024, K = 1024}
gui.model_timeline()
gui.timeline_pin()
gui.kernel("gemm.mma")
gui.problem{M = 1024, N = 1024, K = 512}
gui.model_timeline()
gui.show("Timeline")
