-- tl.load_timeline on a malformed Chrome trace: nil and a message naming the file, the event and the field.
local path = assert(arg[1], "usage: load_bad_trace.lua TRACE.json")
local t, err = tl.load_timeline(path)
assert(t == nil, "a malformed trace must not load")
print(err)
