-- Checks top-level fields of a JSON file: check_json_fields.lua FILE KEY=VALUE...; prints "json fields ok".
local f = assert(io.open(arg[1], "r"))
local doc = assert(tl.json_decode(f:read("a")))
f:close()
for i = 2, #arg do
  local key, want = arg[i]:match("^([%w_]+)=(.*)$")
  assert(key, "expected KEY=VALUE, got " .. arg[i])
  assert(doc[key] ~= nil, "missing field " .. key)
  assert(tostring(doc[key]) == want or tonumber(doc[key]) == tonumber(want),
         ("%s is %s, expected %s"):format(key, tostring(doc[key]), want))
end
print("json fields ok")
