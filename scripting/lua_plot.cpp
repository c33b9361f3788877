// The plot userdata: owns a scene; :save writes PNG/SVG/PDF (format from the extension), :size gives its extent.
#include "scripting/lua_plot.hpp"

#include <utility>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scripting/lua_binding.hpp"
#include "scripting/lua_context.hpp"
#include "scripting/lua_userdata.hpp"
#include "viz/cairo_painter.hpp"

namespace tl::lua {
namespace {

constexpr const char* k_plot_type = "tilelab.plot";

struct Plot {
  viz::Scene scene;
  std::string kind;
};

Plot& check(lua_State* L, int index) { return check_object<Plot>(L, index, k_plot_type); }

// plot:save(path [, {scale=N}]) -> path | nil, message
int l_save(lua_State* L) {
  Plot& p = check(L, 1);
  const char* path = luaL_checkstring(L, 2);
  script_context(L).check_write(path, "plot:save");
  viz::PaintOptions options;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "scale");
    if (!lua_isnil(L, -1)) options.scale = luaL_checknumber(L, -1);
    lua_pop(L, 1);
  }
  Status s = viz::write_scene(p.scene, path, std::nullopt, options);
  if (!s.ok()) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot save the %s plot: %s", p.kind.c_str(), s.message().c_str());
    return 2;
  }
  lua_pushstring(L, path);
  return 1;
}

// plot:size() -> width, height (scene units = pixels at scale 1)
int l_size(lua_State* L) {
  Plot& p = check(L, 1);
  lua_pushnumber(L, p.scene.width);
  lua_pushnumber(L, p.scene.height);
  return 2;
}

int l_tostring(lua_State* L) {
  Plot& p = check(L, 1);
  lua_pushfstring(L, "tl.plot(%s, %dx%d)", p.kind.c_str(), static_cast<int>(p.scene.width),
                  static_cast<int>(p.scene.height));
  return 1;
}

const luaL_Reg k_methods[] = {
    {"save", guarded<l_save>},
    {"size", guarded<l_size>},
    {nullptr, nullptr},
};

}  // namespace

void push_plot(lua_State* L, viz::Scene scene, const std::string& kind) {
  if (new_object_type(L, k_plot_type)) {
    luaL_newlib(L, k_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_tostring);
    lua_setfield(L, -2, "__tostring");
    set_object_gc<Plot>(L, k_plot_type);
  }
  lua_pop(L, 1);
  push_object<Plot>(L, k_plot_type, std::move(scene), kind);
}

const viz::Scene& check_plot(lua_State* L, int index) { return check(L, index).scene; }

void push_plot_table(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  lua_getfield(L, tl_index, "plot");
  if (lua_istable(L, -1)) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, tl_index, "plot");
}

}  // namespace tl::lua
