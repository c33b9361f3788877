// `tl.kernels`, `tl.kernel(name)` and `tl.device`: the kernel registry and the Session from Lua.
#pragma once

#include <map>
#include <string>

#include "runtime/kernel_spec.hpp"
#include "session.hpp"

struct lua_State;

namespace tl::lua {

// Adds kernels, kernel and device to the `tl` table at `tl_index`.
void open_kernels(lua_State* L, int tl_index);

// A Lua table of key = value (numbers, strings, booleans) as the key=value map Schema::resolve takes; nil -> {}.
// Throws std::runtime_error naming `what` and the offending key (call inside lua::guarded).
std::map<std::string, std::string> check_key_values(lua_State* L, int index, const char* what);
// Validated values as a table, typed by the schema (integers, booleans, strings).
void push_values(lua_State* L, const Schema& schema, const Values& values);
// The result table of k:run (times, rates, efficiency, errors, resources, baseline, timeline, record).
void push_run_result(lua_State* L, const Session::Bench& bench);

}  // namespace tl::lua
