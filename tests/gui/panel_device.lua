-- GUI screenshot script: the device panel (this machine's GPU, or why there is none).
gui.show("Device")
