-- GUI screenshot script: compile `copy` (NVRTC, no GPU needed) and show its PTX and ptxas resources.
gui.kernel("copy")
gui.config{vec = 4}
gui.compile()
gui.show("PTX")
