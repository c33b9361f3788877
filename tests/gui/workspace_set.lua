-- Workspace test, first start: open a kernel, change its config and problem, the layout SPEC and the panel.
gui.kernel("gemm.simt")
gui.config{block_M = 64, thread_M = 4}
gui.problem{M = 1000}
gui.layout("(16,8):(1,16)")
gui.show("Source")
