-- GUI screenshot script: the layout viewer on a 128B-swizzled bf16 tile with an ldmatrix.x4 bank overlay.
gui.kernel("gemm.mma")
gui.layout("smem.swizzle128B.bf16.(64,64)", "ldmatrix.x4", "bank")
gui.show("Layouts")
