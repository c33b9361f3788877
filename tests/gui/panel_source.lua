-- GUI screenshot script: the source view of gemm.simt.
gui.kernel("gemm.simt")
gui.show("Source")
