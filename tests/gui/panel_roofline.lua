-- GUI screenshot script: the roofline of the CLI tests' synthetic device profile with their run records.
local here = arg[0]:match("(.*/)") or "./"
gui.device_profile(here .. "../cli/roofline/synthetic_profile.json")
gui.load_runs(here .. "../cli/roofline/runs.jsonl")
gui.show("Roofline")
