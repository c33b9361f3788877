-- GUI screenshot script: the results table (this session's runs; without a GPU the run buttons say why).
gui.kernel("gemm.wgmma")
gui.run("bench")
gui.show("Results")
