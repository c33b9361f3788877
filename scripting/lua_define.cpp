// `tl.define_kernel{...}`: a kernel written by the user, with Lua callbacks, in the same registry as the library's.
#include "scripting/lua_define.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "library/library.hpp"
#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_kernels.hpp"
#include "scripting/lua_userdata.hpp"
#include "scripting/lua_values.hpp"

namespace tl::lua {
namespace {

namespace fs = std::filesystem;

// A Lua function kept in the registry, called back from the spec. Callbacks run on the thread that drives this Lua
// state (instantiate and the reference run synchronously inside the binding that asked for them); an error or a
// wrong result becomes a C++ exception naming the callback, which the caller turns into a message.
struct Callback {
  ScriptContext* ctx = nullptr;  // its active thread runs the callback
  int ref = LUA_NOREF;
  std::string what;  // "gemm.mine grid"

  explicit operator bool() const { return ref != LUA_NOREF; }
};

constexpr const char* k_tensor_type = "tilelab.reference_tensor";

// An input tensor as the reference sees it: t[i] (0-based, linear, row-major), #t, t.shape. Valid during the call.
struct TensorView {
  const HostTensor* tensor;
};

int tensor_index(lua_State* L) {
  auto* v = &check_object<TensorView>(L, 1, k_tensor_type);
  if (!v->tensor) return luaL_error(L, "this input tensor is only valid inside the reference call");
  if (lua_type(L, 2) == LUA_TSTRING && std::string(lua_tostring(L, 2)) == "shape") {
    lua_createtable(L, static_cast<int>(v->tensor->shape.size()), 0);
    for (size_t i = 0; i < v->tensor->shape.size(); ++i) {
      lua_pushinteger(L, v->tensor->shape[i]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
  }
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 0 || i >= v->tensor->numel())
    return luaL_error(L, "index %d out of range 0..%d of input '%s'", static_cast<int>(i),
                      static_cast<int>(v->tensor->numel() - 1), v->tensor->name.c_str());
  lua_pushnumber(L, v->tensor->at(i));
  return 1;
}

int tensor_len(lua_State* L) {
  auto* v = &check_object<TensorView>(L, 1, k_tensor_type);
  lua_pushinteger(L, v->tensor ? v->tensor->numel() : 0);
  return 1;
}

// Calls the callback with `nargs` arguments pushed by `push_args`; leaves `nresults` results on the stack.
// Throws with the Lua error message (file:line of the callback) on failure.
template <class PushArgs>
void call(const Callback& cb, int nargs, int nresults, PushArgs&& push_args) {
  lua_State* L = cb.ctx->active_thread();
  lua_rawgeti(L, LUA_REGISTRYINDEX, cb.ref);
  push_args();
  if (call_script(L, nargs, nresults) != LUA_OK) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error object is not a string";
    lua_pop(L, 1);
    throw std::runtime_error(cb.what + ": " + msg);
  }
}

// The problem and config of a kernel as the callbacks get them (typed tables).
struct Schemas {
  Schema problem, config;
};

std::uint32_t to_u32(lua_State* L, int index, const std::string& what) {
  if (!lua_isinteger(L, index)) {
    double d = lua_tonumber(L, index);
    if (lua_type(L, index) != LUA_TNUMBER || !whole_int64(d))
      throw std::runtime_error(what + " must be a whole number (got " + luaL_typename(L, index) + ")");
  }
  long long v = static_cast<long long>(lua_tonumber(L, index));
  if (v < 0 || v > UINT32_MAX) throw std::runtime_error(what + " is out of range: " + std::to_string(v));
  return static_cast<std::uint32_t>(v);
}

// A Dim3 from a number or {x, y, z} / {x=, y=, z=} at `index`.
Dim3 to_dim3(lua_State* L, int index, const std::string& what) {
  Dim3 d;
  if (lua_type(L, index) == LUA_TNUMBER) {
    d.x = to_u32(L, index, what);
    return d;
  }
  if (!lua_istable(L, index)) throw std::runtime_error(what + " must be a number or {x, y, z} (got " + luaL_typename(L, index) + ")");
  index = lua_absindex(L, index);
  std::uint32_t* parts[] = {&d.x, &d.y, &d.z};
  const char* names[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    lua_rawgeti(L, index, i + 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getfield(L, index, names[i]);
    }
    if (!lua_isnil(L, -1)) *parts[i] = to_u32(L, -1, what + "." + names[i]);
    lua_pop(L, 1);
  }
  if (d.volume() == 0) throw std::runtime_error(what + " has a zero dimension");
  return d;
}

// A value given either as a constant or as function(problem, config): evaluates it onto the stack top.
struct Field {
  std::optional<Callback> fn;  // a function
  int constant_ref = LUA_NOREF;  // else the value itself, kept in the registry
  bool present() const { return fn || constant_ref != LUA_NOREF; }
};

struct UserKernel {
  ScriptContext* ctx;  // owns the Lua state the callbacks live in; outlives the spec (its destructor removes it)
  std::shared_ptr<Schemas> schemas;
  Field entry, grid, block, smem, args, layouts;
  std::optional<Callback> can_implement, flops, bytes, reference;

  lua_State* L() const { return ctx->active_thread(); }
  void push_problem_config(const Values& p, const Values& c) const {
    push_values(L(), schemas->problem, p);
    push_values(L(), schemas->config, c);
  }
  // Pushes the field's value for (p, c) on the stack.
  void eval(const Field& f, const Values& p, const Values& c) const {
    if (f.fn) {
      call(*f.fn, 2, 1, [&] { push_problem_config(p, c); });
    } else {
      lua_rawgeti(L(), LUA_REGISTRYINDEX, f.constant_ref);
    }
  }
};

// "{name}" in an entry template -> that problem/config value.
std::string expand_entry(std::string text, const Values& p, const Values& c, const std::string& kernel) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    size_t close = text.find('}', i);
    if (close == std::string::npos) throw std::runtime_error(kernel + " entry: '{' without '}' in \"" + text + "\"");
    std::string key = text.substr(i + 1, close - i - 1);
    if (c.has(key)) out += c.text(key);
    else if (p.has(key)) out += p.text(key);
    else throw std::runtime_error(kernel + " entry: {" + key + "} is not a problem or config parameter");
    i = close;
  }
  return out;
}

ParamSpec param_from_lua(lua_State* L, int index, const std::string& name, const std::string& where) {
  index = lua_absindex(L, index);
  auto fail = [&](const std::string& why) { return std::runtime_error(where + " '" + name + "': " + why); };
  if (lua_isinteger(L, index)) return ParamSpec::integer(name, lua_tointeger(L, index), 0, LLONG_MAX, "");
  if (lua_isboolean(L, index)) return ParamSpec::boolean(name, lua_toboolean(L, index), "");
  if (!lua_istable(L, index))
    throw fail(std::string("give a default integer, a boolean, or {default=, min=, max=} / {default=, values={...}} "
                           "(got ") + luaL_typename(L, index) + ")");
  lua_getfield(L, index, "help");
  std::string help = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
  lua_getfield(L, index, "default");
  lua_getfield(L, index, "values");
  const int def = lua_gettop(L) - 1, values = lua_gettop(L);
  ParamSpec spec;
  if (lua_istable(L, values)) {
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, values));
    if (n == 0) throw fail("values is empty");
    std::vector<std::int64_t> ints;
    std::vector<std::string> strings;
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, values, i);
      if (lua_isinteger(L, -1)) ints.push_back(lua_tointeger(L, -1));
      else if (lua_type(L, -1) == LUA_TSTRING) strings.push_back(lua_tostring(L, -1));
      else throw fail("values must be integers or strings");
      lua_pop(L, 1);
    }
    if (!ints.empty() && !strings.empty()) throw fail("values mixes integers and strings");
    if (!ints.empty()) {
      std::int64_t d = lua_isinteger(L, def) ? lua_tointeger(L, def) : ints.front();
      if (std::find(ints.begin(), ints.end(), d) == ints.end()) throw fail("the default is not one of the values");
      spec = ParamSpec::one_of(name, d, ints, help);
    } else {
      std::string d = lua_type(L, def) == LUA_TSTRING ? lua_tostring(L, def) : strings.front();
      if (std::find(strings.begin(), strings.end(), d) == strings.end()) throw fail("the default is not one of the values");
      spec = ParamSpec::enumeration(name, d, strings, help);
    }
  } else if (lua_isboolean(L, def)) {
    spec = ParamSpec::boolean(name, lua_toboolean(L, def), help);
  } else if (lua_isinteger(L, def)) {
    lua_getfield(L, index, "min");
    lua_getfield(L, index, "max");
    std::int64_t lo = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
    std::int64_t hi = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : LLONG_MAX;
    lua_pop(L, 2);
    std::int64_t d = lua_tointeger(L, def);
    if (d < lo || d > hi) throw fail("the default is outside min..max");
    spec = ParamSpec::integer(name, d, lo, hi, help);
  } else {
    throw fail("needs an integer or boolean default, or a values list");
  }
  lua_pop(L, 3);
  return spec;
}

// A schema from {name = param, ...} at `index` (sorted by name: Lua tables have no order).
Schema schema_from_lua(lua_State* L, int index, const std::string& where) {
  Schema s;
  if (lua_isnil(L, index)) return s;
  if (!lua_istable(L, index)) throw std::runtime_error(where + " must be a table of name = parameter");
  index = lua_absindex(L, index);
  lua_pushnil(L);
  while (lua_next(L, index)) {
    if (lua_type(L, -2) != LUA_TSTRING) throw std::runtime_error(where + ": parameter names must be strings");
    s.params.push_back(param_from_lua(L, -1, lua_tostring(L, -2), where));
    lua_pop(L, 1);
  }
  std::sort(s.params.begin(), s.params.end(), [](const ParamSpec& a, const ParamSpec& b) { return a.name < b.name; });
  return s;
}

ArgRole role_of(const std::string& r, const std::string& what) {
  if (r == "in") return ArgRole::in;
  if (r == "out") return ArgRole::out;
  if (r == "inout") return ArgRole::inout;
  throw std::runtime_error(what + ": role must be in, out or inout (got '" + r + "')");
}

// The argument list {{name=, dtype=, shape={...}, role=, fill={lo=, hi=, seed=, value=}} or {name=, dtype=, value=}, ...}
std::vector<ArgSpec> args_from_lua(lua_State* L, int index, const std::string& kernel) {
  if (!lua_istable(L, index)) throw std::runtime_error(kernel + " args must be a list of arguments (got " + luaL_typename(L, index) + ")");
  index = lua_absindex(L, index);
  std::vector<ArgSpec> out;
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, index));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    const int a = lua_gettop(L);
    const std::string what = kernel + " args[" + std::to_string(i) + "]";
    if (!lua_istable(L, a)) throw std::runtime_error(what + " must be a table");
    const std::string name = opt_string_field(L, a, "name", "");
    if (name.empty()) throw std::runtime_error(what + " needs a name");
    auto dtype = parse_dtype(opt_string_field(L, a, "dtype", "f32"));
    if (!dtype) throw std::runtime_error(what + " (" + name + "): " + dtype.status().message());
    lua_getfield(L, a, "shape");
    if (lua_istable(L, -1)) {
      std::vector<std::int64_t> shape;
      const lua_Integer m = static_cast<lua_Integer>(lua_rawlen(L, -1));
      for (lua_Integer j = 1; j <= m; ++j) {
        lua_rawgeti(L, -1, j);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) <= 0)
          throw std::runtime_error(what + " (" + name + "): shape entries must be positive integers");
        shape.push_back(lua_tointeger(L, -1));
        lua_pop(L, 1);
      }
      Fill fill;
      fill.seed = static_cast<std::uint64_t>(i);  // distinct inputs unless the script gives seeds
      lua_getfield(L, a, "fill");
      if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "lo");
        lua_getfield(L, -2, "hi");
        lua_getfield(L, -3, "seed");
        lua_getfield(L, -4, "value");
        if (lua_isnumber(L, -4)) fill.lo = lua_tonumber(L, -4);
        if (lua_isnumber(L, -3)) fill.hi = lua_tonumber(L, -3);
        if (lua_isinteger(L, -2)) fill.seed = static_cast<std::uint64_t>(lua_tointeger(L, -2));
        if (lua_isnumber(L, -1)) {
          fill.kind = Fill::Kind::constant;
          fill.value = lua_tonumber(L, -1);
        }
        lua_pop(L, 4);
      }
      lua_pop(L, 1);
      out.push_back(ArgSpec::tensor(name, *dtype, shape, role_of(opt_string_field(L, a, "role", "in"), what), fill));
    } else {
      lua_getfield(L, a, "value");
      if (!lua_isnumber(L, -1)) throw std::runtime_error(what + " (" + name + "): give a shape (tensor) or a value (scalar)");
      out.push_back(ArgSpec::scalar(name, *dtype, lua_tonumber(L, -1)));
      lua_pop(L, 1);
    }
    lua_pop(L, 2);  // shape, the arg
  }
  return out;
}

Callback make_callback(lua_State* L, int index, const std::string& what) {
  lua_pushvalue(L, index);
  return Callback{&script_context(L), luaL_ref(L, LUA_REGISTRYINDEX), what};
}

// Reads field `key` of the definition table at 1: a function, or (when constants are allowed) any value.
Field read_field(lua_State* L, const char* key, const std::string& kernel, bool required) {
  Field f;
  lua_getfield(L, 1, key);
  if (lua_isfunction(L, -1)) f.fn = make_callback(L, -1, kernel + " " + key);
  else if (!lua_isnil(L, -1)) f.constant_ref = (lua_pushvalue(L, -1), luaL_ref(L, LUA_REGISTRYINDEX));
  else if (required) throw std::runtime_error("define_kernel " + kernel + ": '" + key + "' is required");
  lua_pop(L, 1);
  return f;
}

std::optional<Callback> read_function(lua_State* L, const char* key, const std::string& kernel) {
  lua_getfield(L, 1, key);
  std::optional<Callback> cb;
  if (lua_isfunction(L, -1)) cb = make_callback(L, -1, kernel + " " + key);
  else if (!lua_isnil(L, -1))
    throw std::runtime_error("define_kernel " + kernel + ": '" + key + "' must be a function (got " + luaL_typename(L, -1) + ")");
  lua_pop(L, 1);
  return cb;
}

// The kernel source: a file (relative to the working directory, else to the script's directory) or the text itself.
std::string read_source(lua_State* L, const std::string& given, const std::string& kernel) {
  const bool looks_like_code = given.find('\n') != std::string::npos || given.find('(') != std::string::npos;
  if (looks_like_code) return given;
  fs::path p(given);
  if (!fs::exists(p) && p.is_relative()) {
    lua_getglobal(L, "arg");
    if (lua_istable(L, -1)) {
      lua_rawgeti(L, -1, 0);
      if (lua_isstring(L, -1)) {
        fs::path alt = fs::path(lua_tostring(L, -1)).parent_path() / given;
        if (fs::exists(alt)) p = alt;
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("define_kernel " + kernel + ": source file '" + given + "' not found (give a path, or the CUDA source text itself)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A kernel's layouts for the viewer: {name = "SPEC", ...} or {{name = , spec = }, ...}, in name order for the first
// form. Errors name the kernel and the entry.
std::vector<LayoutInfo> layouts_from_lua(lua_State* L, int index, const std::string& kernel) {
  if (!lua_istable(L, index))
    throw std::runtime_error(kernel + " layouts must be a table of name = \"SPEC\" (got " + luaL_typename(L, index) + ")");
  index = lua_absindex(L, index);
  std::vector<LayoutInfo> out;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    LayoutInfo l;
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
      l = {lua_tostring(L, -2), lua_tostring(L, -1)};
    } else if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "name");
      lua_getfield(L, -2, "spec");
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) l = {lua_tostring(L, -2), lua_tostring(L, -1)};
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
    if (l.name.empty() || l.spec.empty()) {
      lua_pop(L, 1);
      throw std::runtime_error(kernel + " layouts: each entry is name = \"SPEC\" or {name = , spec = } (a layout SPEC as "
                               "`tilelab layout` takes it)");
    }
    out.push_back(std::move(l));
  }
  if (out.size() > 1 && lua_rawlen(L, index) == 0)
    std::sort(out.begin(), out.end(), [](const LayoutInfo& a, const LayoutInfo& b) { return a.name < b.name; });
  return out;
}

// The region names of a kernel's TL_PROBE marks, in region-id order: a list of strings.
std::vector<std::string> probes_from_lua(lua_State* L, const std::string& kernel) {
  std::vector<std::string> out;
  lua_getfield(L, 1, "probes");
  if (!lua_isnil(L, -1)) {
    const bool list = lua_istable(L, -1);
    const lua_Integer n = list ? static_cast<lua_Integer>(lua_rawlen(L, -1)) : 0;
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) == LUA_TSTRING) out.push_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    if (!list || out.empty() || static_cast<lua_Integer>(out.size()) != n) {
      lua_pop(L, 1);
      throw std::runtime_error("define_kernel " + kernel + ": 'probes' must be a list of region names, in the order "
                               "of the region ids its TL_PROBE marks use (tile/probe.hpp)");
    }
  }
  lua_pop(L, 1);
  return out;
}

// tl.define_kernel{name=, source=, entry=, params=, problem=, can_implement=, grid=, block=, smem=, args=,
//                  flops=, bytes=, reference=, tolerance={rel=, abs=}, family=, summary=, layouts=, probes=}
//   -> kernel object
int l_define_kernel(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const std::string name = opt_string_field(L, 1, "name", "");
  if (name.empty()) raise("define_kernel: 'name' is required (a string such as \"my.saxpy\")");
  const std::string source_arg = opt_string_field(L, 1, "source", "");
  if (source_arg.empty()) raise("define_kernel %s: 'source' is required (a .cu file or the source text)", name.c_str());
  ScriptContext& ctx = script_context(L);
  Session& session = ctx.session();
  Registry& registry = session.registry();
  if (registry.find(name) && !ctx.defined_here(name))
    raise("define_kernel: '%s' is a library kernel; pick another name", name.c_str());

  auto uk = std::make_shared<UserKernel>();
  uk->ctx = &ctx;
  uk->schemas = std::make_shared<Schemas>();
  lua_getfield(L, 1, "problem");
  uk->schemas->problem = schema_from_lua(L, -1, "define_kernel " + name + " problem");
  lua_getfield(L, 1, "params");
  uk->schemas->config = schema_from_lua(L, -1, "define_kernel " + name + " params");
  lua_pop(L, 2);
  uk->entry = read_field(L, "entry", name, true);
  uk->grid = read_field(L, "grid", name, true);
  uk->block = read_field(L, "block", name, true);
  uk->smem = read_field(L, "smem", name, false);
  uk->args = read_field(L, "args", name, true);
  uk->layouts = read_field(L, "layouts", name, false);
  uk->can_implement = read_function(L, "can_implement", name);
  uk->flops = read_function(L, "flops", name);
  uk->bytes = read_function(L, "bytes", name);
  uk->reference = read_function(L, "reference", name);

  KernelSpec spec;
  spec.name = name;
  spec.family = opt_string_field(L, 1, "family", "user");
  spec.summary = opt_string_field(L, 1, "summary", "user-defined kernel (tl.define_kernel)");
  spec.source = "user/" + name + ".cu";
  spec.problem = uk->schemas->problem;
  spec.config = uk->schemas->config;
  spec.archs = {session.target().limits.arch};
  spec.probes = probes_from_lua(L, name);
  Tolerance tol = tolerance_for(DType::f32);
  lua_getfield(L, 1, "tolerance");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "rel");
    lua_getfield(L, -2, "abs");
    if (lua_isnumber(L, -2)) tol.rel = lua_tonumber(L, -2);
    if (lua_isnumber(L, -1)) tol.max_abs = lua_tonumber(L, -1);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);

  spec.name_expression = [uk, name](const Values& p, const Values& c) {
    lua_State* S = uk->L();
    uk->eval(uk->entry, p, c);
    if (lua_type(S, -1) != LUA_TSTRING) {
      std::string got = luaL_typename(S, -1);
      lua_pop(S, 1);
      throw std::runtime_error(name + " entry must be a string such as \"my_kernel<{threads}>\" (got " + got + ")");
    }
    std::string text = lua_tostring(S, -1);
    lua_pop(S, 1);
    return expand_entry(text, p, c, name);
  };
  spec.launch = [uk, name](const Values& p, const Values& c, const DeviceLimits&) {
    lua_State* S = uk->L();
    LaunchGeometry g;
    uk->eval(uk->grid, p, c);
    g.grid = to_dim3(S, -1, name + " grid");
    lua_pop(S, 1);
    uk->eval(uk->block, p, c);
    g.block = to_dim3(S, -1, name + " block");
    lua_pop(S, 1);
    if (uk->smem.present()) {
      uk->eval(uk->smem, p, c);
      g.dynamic_smem = to_u32(S, -1, name + " smem");
      lua_pop(S, 1);
    }
    return g;
  };
  if (uk->layouts.present())
    spec.layouts = [uk, name](const Values& p, const Values& c) {
      uk->eval(uk->layouts, p, c);
      std::vector<LayoutInfo> out = layouts_from_lua(uk->L(), -1, name);
      lua_pop(uk->L(), 1);
      return out;
    };
  spec.args = [uk, name](const Values& p, const Values& c, const DeviceLimits&) {
    uk->eval(uk->args, p, c);
    std::vector<ArgSpec> args = args_from_lua(uk->L(), -1, name);
    lua_pop(uk->L(), 1);
    return args;
  };
  spec.can_implement = [uk](const Values& p, const Values& c, const DeviceLimits&) -> Status {
    if (!uk->can_implement) return Status::success();
    lua_State* S = uk->L();
    call(*uk->can_implement, 2, 2, [&] { uk->push_problem_config(p, c); });
    const bool ok = lua_toboolean(S, -2);
    std::string why = lua_isstring(S, -1) ? lua_tostring(S, -1) : "can_implement returned false";
    lua_pop(S, 2);
    return ok ? Status::success() : make_error(ErrorCode::unsupported, why);
  };
  auto per_problem = [uk](const std::optional<Callback>& cb) -> std::function<double(const Values&)> {
    if (!cb) return {};
    return [uk, cb](const Values& p) {
      lua_State* S = uk->L();
      call(*cb, 1, 1, [&] { push_values(S, uk->schemas->problem, p); });
      if (lua_type(S, -1) != LUA_TNUMBER) {
        lua_pop(S, 1);
        throw std::runtime_error(cb->what + " must return a number");
      }
      double v = lua_tonumber(S, -1);
      lua_pop(S, 1);
      return v;
    };
  };
  spec.flops = per_problem(uk->flops);
  spec.min_bytes = per_problem(uk->bytes);
  spec.tolerance = [tol](const Values&, DType) { return tol; };
  spec.reference_thread_safe = false;  // it calls into the script's Lua state
  spec.reference = [uk, name](const Values& p, const ReferenceInputs& inputs, const std::string& output,
                              const std::vector<std::int64_t>& indices) -> Result<std::vector<double>> {
    if (!uk->reference)
      return make_error(ErrorCode::invalid_argument,
                        name + " has no reference= function, so its outputs cannot be checked");
    lua_State* S = uk->L();
    const int top = lua_gettop(S);
    push_values(S, uk->schemas->problem, p);
    const int problem = lua_gettop(S);
    lua_newtable(S);
    const int inputs_table = lua_gettop(S);
    std::vector<TensorView*> views;
    for (const auto& [tname, tensor] : inputs.tensors) {
      views.push_back(&push_object<TensorView>(S, k_tensor_type, &tensor));
      lua_setfield(S, inputs_table, tname.c_str());
    }
    for (const auto& [sname, value] : inputs.scalars) {
      lua_pushnumber(S, value);
      lua_setfield(S, inputs_table, sname.c_str());
    }
    std::vector<double> out;
    out.reserve(indices.size());
    std::string error;
    for (std::int64_t i : indices) {
      lua_rawgeti(S, LUA_REGISTRYINDEX, uk->reference->ref);
      lua_pushvalue(S, problem);
      lua_pushvalue(S, inputs_table);
      lua_pushstring(S, output.c_str());
      lua_pushinteger(S, i);
      if (call_script(S, 4, 1) != LUA_OK) {
        error = lua_tostring(S, -1) ? lua_tostring(S, -1) : "error";
        break;
      }
      if (lua_type(S, -1) != LUA_TNUMBER) {
        error = std::string("returned ") + luaL_typename(S, -1) + " for " + output + "[" + std::to_string(i) + "], not a number";
        break;
      }
      out.push_back(lua_tonumber(S, -1));
      lua_pop(S, 1);
    }
    for (TensorView* v : views) v->tensor = nullptr;
    lua_settop(S, top);
    if (!error.empty()) return make_error(ErrorCode::invalid_argument, name + " reference: " + error);
    return out;
  };

  session.jit().sources().add(spec.source, read_source(L, source_arg, name));
  if (ctx.defined_here(name)) registry.remove(name);
  Status added = registry.add(std::move(spec));
  if (!added) throw std::runtime_error("define_kernel: " + added.message());
  if (!ctx.defined_here(name)) ctx.add_user_kernel(name);
  // Check the definition now with the defaults, so a mistake surfaces at define time, not at the first run.
  std::string defect;
  try {
    auto inst = session.instantiate(name, {}, {});
    if (!inst && inst.status().code() != ErrorCode::unsupported) defect = inst.status().message();
  } catch (const std::exception& e) {
    defect = e.what();
  }
  if (!defect.empty()) {
    registry.remove(name);
    throw std::runtime_error("define_kernel " + name + " (checked with the default problem and config): " + defect);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "tilelab.tl");
  lua_getfield(L, -1, "kernel");
  lua_pushstring(L, name.c_str());
  lua_call(L, 1, 1);
  return 1;
}

}  // namespace

void open_define(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  if (new_object_type(L, k_tensor_type)) {
    lua_pushcfunction(L, tensor_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, tensor_len);
    lua_setfield(L, -2, "__len");
  }
  lua_pop(L, 1);
  lua_pushvalue(L, tl_index);
  lua_setfield(L, LUA_REGISTRYINDEX, "tilelab.tl");
  lua_pushcfunction(L, guarded<l_define_kernel>);
  lua_setfield(L, tl_index, "define_kernel");
}

}  // namespace tl::lua
