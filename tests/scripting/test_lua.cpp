// The Lua runner: scripts run, errors carry file:line and a traceback, JSON round-trips.
#include <gtest/gtest.h>

#include "scripting/lua_runner.hpp"

namespace tl::lua {
namespace {

TEST(LuaRunner, RunsAScript) {
  Status s = run_string("local x = 1 + 1; assert(x == 2); assert(tl.version)", "ok.lua");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(LuaRunner, RuntimeErrorHasFileLineAndTraceback) {
  Status s = run_string("local function f()\n  error('boom')\nend\nf()\n", "bad.lua");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.lua:2: boom"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("stack traceback"), std::string::npos) << s.message();
}

TEST(LuaRunner, SyntaxErrorHasFileLine) {
  Status s = run_string("x = = 1\n", "syntax.lua");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::parse);
  EXPECT_NE(s.message().find("syntax.lua:1:"), std::string::npos) << s.message();
}

TEST(LuaRunner, ArgsAreVisible) {
  RunOptions opt;
  opt.args = {"alpha", "42"};
  Status s = run_string("assert(arg[1] == 'alpha' and arg[2] == '42' and arg[0] == 'args.lua')", "args.lua", opt);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(LuaTl, JsonRoundTrip) {
  Status s = run_string(R"(
    local t = {name = "x", list = {1, 2, 3}, nested = {ok = true}}
    local back = tl.json_decode(tl.json_encode(t))
    assert(back.name == "x" and #back.list == 3 and back.list[3] == 3 and back.nested.ok == true)
    local v, err = tl.json_decode("{not json")
    assert(v == nil and err)
  )", "json.lua");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(LuaTl, CxxErrorBecomesLuaError) {
  // A function value cannot become JSON: the binding's C++ exception must surface as a catchable Lua error.
  Status s = run_string(R"(
    local ok, err = pcall(tl.json_encode, {f = function() end})
    assert(not ok and err:find("cannot become JSON"), err)
  )", "cxx.lua");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(LuaTl, InfoDescribesTheSystem) {
  Status s = run_string(R"(
    local i = tl.info()
    assert(i.host.cpu_cores > 0)
    assert(#i.devices > 0 or type(i.why_no_device) == "string")
  )", "info.lua");
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace tl::lua
