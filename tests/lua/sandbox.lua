-- The sandbox: arg[1] == "safe" expects os.execute, io.popen, package.loadlib disabled; "unsafe" expects them back.
local mode = arg[1]
local function denied(f, ...)
  local ok, err = pcall(f, ...)
  return not ok and tostring(err):find("disabled in the sandbox", 1, true) ~= nil
end
if mode == "safe" then
  assert(denied(os.execute, "true"), "os.execute must be disabled")
  assert(denied(io.popen, "true"), "io.popen must be disabled")
  assert(denied(package.loadlib, "libc.so.6", "*"), "package.loadlib must be disabled")
  assert(package.cpath == "", "no C modules through require")
  -- files under the current directory stay usable (tests/lua/escapes/writes.lua checks the rest)
  local path = "sandbox_file.txt"
  local f = assert(io.open(path, "w"))
  f:write("x")
  f:close()
  assert(os.remove(path))
  print("sandbox ok")
elseif mode == "unsafe" then
  assert(os.execute("true") == true, "os.execute works with --unsafe")
  local p = assert(io.popen("echo hi"))
  assert(p:read("l") == "hi")
  p:close()
  print("unsafe ok")
else
  error("usage: sandbox.lua safe|unsafe")
end
