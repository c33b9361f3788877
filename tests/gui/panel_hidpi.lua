-- GUI screenshot script: the roofline at a HiDPI scale (fonts, widgets and the plot 1.5x) in the light theme.
-- args: --scale 1.5 --theme light
local here = arg[0]:match("(.*/)") or "./"
gui.device_profile(here .. "../cli/roofline/synthetic_profile.json")
gui.load_runs(here .. "../cli/roofline/runs.jsonl")
gui.show("Roofline")
assert(gui.theme() == "light", "--theme light did not take")
