// The sandbox a script runs in unless --unsafe: what of Lua's standard library it keeps, and what it loses.
#pragma once

struct lua_State;

namespace tl::lua {

// On a state with the standard libraries open and a ScriptContext installed:
// - no processes (os.execute, io.popen) and no native code (package.loadlib, C modules through require);
// - text chunks only: load, loadfile, dofile and require refuse precompiled bytecode, and string.dump is gone
//   (crafted bytecode can crash the VM);
// - of the debug library only debug.traceback (the rest reaches past every other rule: hooks, registry,
//   metatables, upvalues);
// - files are written only under the allowed folders (ScriptContext::write_refusal): io.open in a writing mode,
//   io.output, os.remove, os.rename and os.tmpname (its file is made in /tmp) check their paths; reading stays free.
// A removed function stays in its table and raises "NAME is disabled in the sandbox (…--unsafe…)".
void install_sandbox(lua_State* L);

}  // namespace tl::lua
