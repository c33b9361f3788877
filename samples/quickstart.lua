-- TileLab quickstart: what this machine offers, written under out/quickstart/ (or the directory given).
-- Run: tilelab run samples/quickstart.lua [OUTDIR]      (what `make run` does on a machine with no display)
-- It grows with TileLab: today it reports the host, CUDA and GPUs; steps that need a GPU say why they skip.

local outdir = arg[1] or "out/quickstart"
assert(tl.mkdir(outdir))

local info = tl.info()
print(("TileLab %s quickstart -> %s/"):format(tl.version, outdir))
print(("host:  %s, %s (%d cores)"):format(info.host.hostname, info.host.cpu, info.host.cpu_cores))
print(("CUDA:  built with %s, runtime %s, driver %s, NVRTC %s"):format(
  info.toolkit.built_with, info.toolkit.cuda_runtime, info.toolkit.cuda_driver, info.toolkit.nvrtc))

if #info.devices == 0 then
  print("GPU:   none (" .. info.why_no_device .. ")")
  print("       GPU steps skipped: kernel runs, timings and measured ceilings need a GPU.")
else
  for _, d in ipairs(info.devices) do
    print(("GPU %d: %s, %s, %d SMs, %.1f GiB"):format(d.index, d.name, d.arch, d.sm_count,
      d.memory_bytes / 2^30))
  end
end

assert(tl.write_file(outdir .. "/device.json", tl.json_encode(info, 2)))
print("wrote " .. outdir .. "/device.json")
