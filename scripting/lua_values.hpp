// Problem and config values between Lua tables and the runtime's key=value maps and typed Values.
#pragma once

#include <map>
#include <string>

#include "runtime/spec/kernel_spec.hpp"

struct lua_State;

namespace tl::lua {

// A Lua table of key = value (numbers, strings, booleans) as the key=value map Schema::resolve takes; nil -> {}.
// Throws std::runtime_error naming `what` and the offending key (call inside lua::guarded).
std::map<std::string, std::string> check_key_values(lua_State* L, int index, const char* what);
// Whether a Lua float is a whole number a 64-bit integer holds: not inf or nan, no fraction, under 2^63 in size
// (converting anything else to an integer is undefined: inf read as -2^63).
bool whole_int64(double v);
// Validated values as a table, typed by the schema (integers, booleans, strings).
void push_values(lua_State* L, const Schema& schema, const Values& values);

}  // namespace tl::lua
