// The Lua runner: scripts run, errors carry file:line and a traceback, JSON round-trips.
#include <gtest/gtest.h>

#include <filesystem>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "library/library.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_kernels.hpp"
#include "scripting/lua_memory.hpp"
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

TEST(LuaRunner, ErrorObjectsGetTheLineTheyWereRaisedAt) {
  Status s = run_string("local x = 1\nerror({code = 7})\n", "object.lua");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("object.lua:2: (error object is a table value)\nstack traceback"), std::string::npos)
      << s.message();
  s = run_string("error(setmetatable({}, {__tostring = function() return 'shown' end}))", "shown.lua");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shown.lua:1: shown\nstack traceback"), std::string::npos) << s.message();
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

// The success path of k:run needs a GPU end to end; its result table is built here from a record as the worker
// would return it, so the field names and units scripts rely on are checked in CI.
TEST(LuaKernels, RunResultCarriesTimesRatesErrorsResourcesBaselineAndRecord) {
  auto spec = library_registry().find("gemm.simt");
  ASSERT_TRUE(spec.ok());
  auto inst = instantiate(**spec, {{"M", "128"}, {"N", "128"}, {"K", "64"}}, {}, limits_for_arch("sm_90a"));
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  Session::Bench b;
  b.prepared.instance = *inst;
  b.prepared.compiled.resources.registers = 40;
  b.prepared.compiled.resources.shared_static_bytes = 1024;
  b.prepared.compiled.name_expression = "tl::gemm_simt<...>";
  RunRecord& r = b.record;
  r.kernel = "gemm.simt";
  r.time_ms.count = 5;
  r.time_ms.median = 1.0;
  r.time_ms.min = 0.9;
  r.time_ms.max = 1.2;
  r.tflops = 2.5;
  r.gbps = 300;
  r.efficiency = {"compute", "fp32_fma", 50e12, 0.5};
  r.verified = true;
  OutputCheck out;
  out.name = "C";
  out.comparison.rel_error = 1e-6;
  out.comparison.max_abs_error = 2e-5;
  out.comparison.passed = true;
  r.outputs.push_back(out);
  BaselineResult base;
  base.name = "cublas";
  base.time_ms.count = 5;
  base.time_ms.median = 0.8;
  r.baseline = base;

  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  push_run_result(L, b);
  lua_setglobal(L, "r");
  const char* checks = R"(
    assert(r.kernel == "gemm.simt" and r.passed == true and r.verified == true and r.failure == nil)
    assert(r.median_ms == 1.0 and r.min_ms == 0.9 and r.max_ms == 1.2 and r.repeats == 5)
    assert(r.tflops == 2.5 and r.gbps == 300 and r.efficiency == 0.5 and r.bound == "compute")
    assert(r.rel_err == 1e-6 and r.max_abs_err == 2e-5)
    assert(r.problem.M == 128 and math.type(r.config.block_M) == "integer")
    assert(r.resources.registers == 40 and r.resources.smem == 1024 and r.resources.name_expression:find("gemm_simt"))
    assert(r.baseline.name == "cublas" and r.baseline.median_ms == 0.8 and r.baseline.speedup == 0.8)
    assert(r.record.kernel == "gemm.simt" and r.record.time_ms.median == 1.0)
  )";
  int rc = luaL_dostring(L, checks);
  std::string err = rc == LUA_OK ? "" : lua_tostring(L, -1);
  lua_close(L);
  EXPECT_EQ(rc, LUA_OK) << err;
}

// The allocator behind --max-memory, called as Lua calls it: a block past the limit is refused once (Lua collects
// its garbage and asks again); refused a second time, the limit is exceeded. Inside a binding it is granted up to
// twice the limit, so no memory error longjmps through C++ frames.
TEST(LuaMemory, RefusesPastTheLimitAfterOneRetryAndGrantsBindingsUpToTwice) {
  MemoryBudget b;
  b.limit = 1000;
  void* a = MemoryBudget::allocate(&b, nullptr, LUA_TSTRING, 600);  // a new block: the type, not a size
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(b.used, 600u);
  EXPECT_EQ(MemoryBudget::allocate(&b, nullptr, LUA_TTABLE, 600), nullptr);
  EXPECT_FALSE(b.exceeded) << "the first refusal only asks for a collection";
  EXPECT_EQ(MemoryBudget::allocate(&b, nullptr, LUA_TTABLE, 600), nullptr);
  EXPECT_TRUE(b.exceeded);
  b.exceeded = false;
  b.in_binding = true;
  EXPECT_EQ(MemoryBudget::allocate(&b, nullptr, LUA_TTABLE, 600), nullptr);
  void* c = MemoryBudget::allocate(&b, nullptr, LUA_TTABLE, 600);
  ASSERT_NE(c, nullptr) << "a binding's retry is granted below twice the limit";
  EXPECT_TRUE(b.exceeded) << "and the script is stopped when the binding returns";
  b.in_binding = false;
  EXPECT_EQ(MemoryBudget::allocate(&b, nullptr, LUA_TTABLE, 900), nullptr) << "2 x 1000 is the cap";
  void* d = MemoryBudget::allocate(&b, nullptr, LUA_TSTRING, 100);
  EXPECT_NE(d, nullptr) << "a stopping script has room for its error message";
  EXPECT_EQ(MemoryBudget::allocate(&b, d, 100, 0), nullptr);
  EXPECT_EQ(MemoryBudget::allocate(&b, a, 600, 0), nullptr);
  EXPECT_EQ(MemoryBudget::allocate(&b, c, 600, 0), nullptr);
  EXPECT_EQ(b.used, 0u);
}

TEST(LuaMemory, GarbageTheCollectorFreesFitsUnderTheLimit) {
  RunOptions o;
  o.script.max_memory_mib = 16;
  Status s = run_string("for i = 1, 50 do local s = string.rep('x', 4 << 20) end", "churn.lua", o);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(LuaMemory, ABindingThatCrossesTheLimitFinishesThenStopsTheScriptAtItsLine) {
  RunOptions o;
  o.script.max_memory_mib = 16;
  // 1.5 million numbers: 3 MB of text, a 24 MB table.
  Status s = run_string("local text = '[' .. string.rep('1,', 1500000) .. '1]'\nlocal t = tl.json_decode(text)\n",
                        "decode.lua", o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("decode.lua:2: not enough memory: the script ran past its memory limit (--max-memory 16 "
                             "MiB"),
            std::string::npos)
      << s.message();
}

TEST(LuaSandbox, OsExitEndsTheScriptNotTheProcess) {
  // Before the sandbox took os.exit, this test's process ended here with status 3.
  int status = -1;
  RunOptions o;
  o.exit_status = &status;
  Status st = run_string("pcall(os.exit, 3)\nerror('ran on after os.exit')\n", "exit.lua", o);
  EXPECT_EQ(status, 3);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exit.lua: the script ended with os.exit(3)"), std::string::npos) << st.message();
  status = -1;
  EXPECT_TRUE(run_string("os.exit(true)", "ok.lua", o).ok());
  EXPECT_EQ(status, 0);
  status = -1;
  EXPECT_FALSE(run_string("os.exit(false)", "false.lua", o).ok());
  EXPECT_EQ(status, 1);
}

TEST(LuaSandbox, ASymbolicLinkLoopIsRefusedNotFollowedForever) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::current_path() / "sandbox_link_loop";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink("b", dir / "a");
  fs::create_symlink("a", dir / "b");
  ScriptContext ctx(ScriptOptions{}, nullptr);
  const std::string refusal = ctx.write_refusal((dir / "a").string(), "io.open");
  EXPECT_NE(refusal.find("io.open: writing"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("pass --allow-write DIR or --unsafe"), std::string::npos) << refusal;
  EXPECT_EQ(ctx.write_refusal((dir / "file.txt").string(), "io.open"), "") << "the current directory is allowed";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tl::lua
