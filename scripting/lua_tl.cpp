// `tl` core: version, device/system info, JSON helpers and file-system helpers a sandboxed script needs.
#include "scripting/lua_tl.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/device/device.hpp"
#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_define.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_kernels.hpp"
#include "scripting/lua_layout.hpp"
#include "scripting/lua_results.hpp"
#include "scripting/lua_sweep.hpp"
#include "scripting/lua_timeline.hpp"

namespace tl::lua {
namespace {

// tl.info() -> {host=..., toolkit=..., devices={...}, why_no_device=...}
int l_info(lua_State* L) {
  nlohmann::json j = query_system();
  push_json(L, j);
  return 1;
}

// tl.json_encode(value [, indent]) -> string
int l_json_encode(lua_State* L) {
  luaL_checkany(L, 1);
  int indent = static_cast<int>(luaL_optinteger(L, 2, -1));
  std::string text = to_json(L, 1).dump(indent);
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

// tl.json_decode(string) -> value | nil, message
int l_json_decode(lua_State* L) {
  size_t len = 0;
  const char* text = luaL_checklstring(L, 1, &len);
  if (const std::size_t at = json_too_deep_at({text, len}); at != std::string_view::npos) {
    lua_pushnil(L);
    lua_pushfstring(L, "arrays and objects nest deeper than %d levels (at byte %I); tl.json_decode refuses such a "
                    "document", k_max_json_depth, static_cast<lua_Integer>(at));
    return 2;
  }
  auto parsed = nlohmann::json::parse(text, text + len, nullptr, false);
  if (parsed.is_discarded()) {
    lua_pushnil(L);
    lua_pushstring(L, "not valid JSON");
    return 2;
  }
  push_json(L, parsed);
  return 1;
}

// tl.mkdir(path): creates the directory and its parents; returns true | nil, message.
int l_mkdir(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  script_context(L).check_write(path, "tl.mkdir");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot create directory '%s': %s", path, ec.message().c_str());
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

// tl.write_file(path, text): writes text, creating parent directories; returns true | nil, message.
int l_write_file(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  size_t len = 0;
  const char* text = luaL_checklstring(L, 2, &len);
  script_context(L).check_write(path, "tl.write_file");
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary);
  if (!out || !out.write(text, static_cast<std::streamsize>(len))) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot write '%s'", path);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

const luaL_Reg k_tl_functions[] = {
    {"info", guarded<l_info>},
    {"json_encode", guarded<l_json_encode>},
    {"json_decode", guarded<l_json_decode>},
    {"mkdir", guarded<l_mkdir>},
    {"write_file", guarded<l_write_file>},
    {nullptr, nullptr},
};

}  // namespace

int open_tl(lua_State* L) {
  luaL_newlib(L, k_tl_functions);
  lua_pushstring(L, TILELAB_VERSION);
  lua_setfield(L, -2, "version");
  open_kernels(L, -1);
  open_layout(L, -1);
  open_timeline(L, -1);
  open_define(L, -1);
  register_sweep(L, -1);
  register_results(L, -1);
  return 1;
}

}  // namespace tl::lua
