// `tl.layout(SPEC)` (the layout algebra as methods, :plot), `tl.banks`, `tl.plot.layout` and `tl.plot.banks`.
#include "scripting/lua_layout.hpp"

#include <string>
#include <string_view>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scripting/lua_binding.hpp"
#include "scripting/lua_json.hpp"
#include "scripting/lua_plot.hpp"
#include "scripting/lua_userdata.hpp"
#include "tile/layout_spec.hpp"
#include "viz/layout_adapter.hpp"
#include "viz/layout_scene.hpp"

namespace tl::lua {
namespace {

constexpr const char* k_layout_type = "tilelab.layout";

// A parsed SPEC: its text (what plots and messages show) and what kernels/tile made of it.
struct LuaLayout {
  LayoutSpec spec;
  std::string dtype;  // element type for banks when the SPEC does not say ("" -> the SPEC's, else f32)
};

LuaLayout& check_layout(lua_State* L, int index) {
  return check_object<LuaLayout>(L, index, k_layout_type);
}

void check_options(lua_State* L, int index, const char* what) {
  if (!lua_isnoneornil(L, index) && !lua_istable(L, index))
    raise("%s: options must be a table (got %s)", what, luaL_typename(L, index));
}

void push_layout(lua_State* L, LayoutSpec spec, std::string dtype) {
  push_object<LuaLayout>(L, k_layout_type, std::move(spec), std::move(dtype));
}

// Parses SPEC text; a malformed one raises with the column and a caret under it.
LayoutSpec parse_or_raise(const std::string& text) {
  LayoutSpec s = parse_spec(text);
  if (!s.ok)
    throw std::runtime_error("tl.layout: column " + std::to_string(s.position + 1) + ": " + s.message + "\n" +
                             format_spec_error(s));
  return s;
}

// The plain layout the algebra works on; swizzles and atoms have none.
const Layout& algebra_layout(const LuaLayout& l, const char* op) {
  if (l.spec.kind == SpecKind::layout) return l.spec.memory.layout();
  raise("%s: '%s' is %s; the layout algebra takes plain layouts such as (8,4):(4,1)", op, l.spec.text.c_str(),
        l.spec.is_fragment() ? "an atom" : "a swizzled layout");
}

// A layout operand: a layout object or a SPEC string.
Layout check_operand(lua_State* L, int index, const char* op) {
  if (lua_type(L, index) == LUA_TSTRING) {
    LayoutSpec s = parse_or_raise(lua_tostring(L, index));
    if (s.kind != SpecKind::layout) raise("%s: the operand must be a plain layout (got '%s')", op, s.text.c_str());
    return s.memory.layout();
  }
  if (!test_object<LuaLayout>(L, index, k_layout_type)) raise("%s: the operand must be a layout or a SPEC string (got %s)", op, luaL_typename(L, index));
  return algebra_layout(check_layout(L, index), op);
}

// Pushes the result of an algebra operation as a new layout object; CuTe-style failures raise with their reason.
int push_result(lua_State* L, const Layout& result, const char* op, const std::string& dtype) {
  if (!result.ok()) raise("%s: %s", op, layout_error_message(result.error()));
  push_layout(L, parse_or_raise(to_string(result)), dtype);
  return 1;
}

// tl.layout(SPEC [, {dtype=}]) -> layout; raises on a malformed SPEC naming the column.
int l_layout(lua_State* L) {
  std::string text = luaL_checkstring(L, 1);
  std::string dtype = opt_string_field(L, 2, "dtype");
  if (!dtype.empty() && dtype_bytes(dtype) == 0) raise("tl.layout: unknown dtype '%s' (f32, f16, bf16, s8, e4m3, ...)", dtype.c_str());
  push_layout(L, parse_or_raise(text), dtype);
  return 1;
}

int l_size(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  lua_pushinteger(L, l.spec.is_fragment() ? l.spec.fragment.tv().size() : l.spec.memory.layout().size());
  return 1;
}

int l_cosize(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  lua_pushinteger(L, l.spec.is_fragment() ? l.spec.fragment.tv().cosize() : l.spec.memory.layout().cosize());
  return 1;
}

const Layout& any_layout(const LuaLayout& l) { return l.spec.is_fragment() ? l.spec.fragment.tv() : l.spec.memory.layout(); }

int l_shape(lua_State* L) {
  lua_pushstring(L, to_string(any_layout(check_layout(L, 1)).shape()).c_str());
  return 1;
}
int l_stride(lua_State* L) {
  lua_pushstring(L, to_string(any_layout(check_layout(L, 1)).stride()).c_str());
  return 1;
}
int l_rank(lua_State* L) {
  lua_pushinteger(L, any_layout(check_layout(L, 1)).rank());
  return 1;
}

// l:tile() -> rows, cols: the 2-D extent plotted.
int l_tile(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  lua_pushinteger(L, l.spec.rows);
  lua_pushinteger(L, l.spec.cols);
  return 2;
}

// l:kind() -> "layout" | "swizzled" | "smem" | "atom"
int l_kind(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  const char* names[] = {"layout", "swizzled", "smem", "atom"};
  lua_pushstring(L, names[static_cast<int>(l.spec.kind)]);
  return 1;
}

int check_index(lua_State* L, int index, int bound, const char* what) {
  lua_Integer v = luaL_checkinteger(L, index);
  if (v < 0 || v >= bound) raise("%s %lld is out of range 0..%d", what, static_cast<long long>(v), bound - 1);
  return static_cast<int>(v);
}

// l:at(i) or l(i) -> offset; l:at(row, col) -> offset of the tile coordinate (memory layouts);
// atoms: l:at(thread, value) -> row, col.
int l_at(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  if (l.spec.is_fragment()) {
    const Fragment& f = l.spec.fragment;
    int t = check_index(L, 2, f.num_threads(), "thread");
    int v = check_index(L, 3, f.num_values(), "value");
    TileCoord c = f(t, v);
    lua_pushinteger(L, c.row);
    lua_pushinteger(L, c.col);
    return 2;
  }
  if (lua_isnoneornil(L, 3)) {
    lua_pushinteger(L, l.spec.memory(check_index(L, 2, l.spec.memory.layout().size(), "index")));
    return 1;
  }
  int r = check_index(L, 2, l.spec.rows, "row");
  int c = check_index(L, 3, l.spec.cols, "col");
  lua_pushinteger(L, l.spec.offset(r, c));
  return 1;
}

// atoms: l:owner(row, col) -> thread, value
int l_owner(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  if (!l.spec.is_fragment()) raise("owner: '%s' is not an atom (no threads)", l.spec.text.c_str());
  int r = check_index(L, 2, l.spec.fragment.rows(), "row");
  int c = check_index(L, 3, l.spec.fragment.cols(), "col");
  ThreadValue tv = l.spec.fragment.owner(r, c);
  lua_pushinteger(L, tv.thread);
  lua_pushinteger(L, tv.value);
  return 2;
}

int l_compose(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  return push_result(L, composition(algebra_layout(a, "compose"), check_operand(L, 2, "compose")), "compose", a.dtype);
}

int l_complement(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const Layout& l = algebra_layout(a, "complement");
  Layout r = lua_isnoneornil(L, 2) ? complement(l) : complement(l, static_cast<int>(luaL_checkinteger(L, 2)));
  return push_result(L, r, "complement", a.dtype);
}

int l_coalesce(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  return push_result(L, coalesce(algebra_layout(a, "coalesce")), "coalesce", a.dtype);
}

int l_filter(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  return push_result(L, filter(algebra_layout(a, "filter")), "filter", a.dtype);
}

int l_flatten(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  return push_result(L, flatten(algebra_layout(a, "flatten")), "flatten", a.dtype);
}

// l:divide(tiler [, "logical"|"zipped"|"tiled"]) with a layout tiler
int l_divide(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const Layout& l = algebra_layout(a, "divide");
  Layout b = check_operand(L, 2, "divide");
  std::string form = luaL_optstring(L, 3, "logical");
  Layout r;
  if (form == "logical") r = logical_divide(l, b);
  else if (form == "zipped") r = zipped_divide(l, b);
  else if (form == "tiled") r = tiled_divide(l, b);
  else raise("divide: unknown form '%s' (logical, zipped or tiled)", form.c_str());
  return push_result(L, r, "divide", a.dtype);
}

// l:product(other [, "logical"|"blocked"|"raked"])
int l_product(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const Layout& l = algebra_layout(a, "product");
  Layout b = check_operand(L, 2, "product");
  std::string form = luaL_optstring(L, 3, "logical");
  Layout r;
  if (form == "logical") r = logical_product(l, b);
  else if (form == "blocked") r = blocked_product(l, b);
  else if (form == "raked") r = raked_product(l, b);
  else raise("product: unknown form '%s' (logical, blocked or raked)", form.c_str());
  return push_result(L, r, "product", a.dtype);
}

// l:inverse() -> right inverse; l:inverse("left") -> left inverse
int l_inverse(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const Layout& l = algebra_layout(a, "inverse");
  std::string side = luaL_optstring(L, 2, "right");
  if (side != "right" && side != "left") raise("inverse: '%s' is neither \"right\" nor \"left\"", side.c_str());
  return push_result(L, side == "right" ? right_inverse(l) : left_inverse(l), "inverse", a.dtype);
}

// l:mode(i) -> layout of mode i (0-based, as CuTe's get<i>)
int l_mode(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const Layout& l = algebra_layout(a, "mode");
  return push_result(L, l.mode(static_cast<int>(luaL_checkinteger(L, 2))), "mode", a.dtype);
}

// The fragment of an atom, for repeat_/replicate; other kinds raise.
const LuaLayout& check_fragment(lua_State* L, const char* op) {
  const LuaLayout& l = check_layout(L, 1);
  if (!l.spec.is_fragment())
    raise("%s: '%s' is a memory layout; repeat_ and replicate grow register fragments (atoms such as "
          "mma.m16n8k16.f16.A)", op, l.spec.text.c_str());
  return l;
}

int check_count(lua_State* L, int index, const char* op, const char* what) {
  const lua_Integer v = luaL_checkinteger(L, index);
  if (v < 1 || v > (1 << 24)) raise("%s: %s must be 1..16777216 (got %lld)", op, what, static_cast<long long>(v));
  return static_cast<int>(v);
}

// l:repeat_(rows, cols [, "thread"|"value" [, "rows"|"cols"]]) -> the fragment tiled rows x cols times (TileLang's
// Fragment.repeat; `repeat` is a Lua keyword): the SPEC with .repeat(...) appended, so it plots and prints as one.
int l_repeat(lua_State* L) {
  const LuaLayout& l = check_fragment(L, "repeat_");
  const int rows = check_count(L, 2, "repeat_", "rows");
  const int cols = check_count(L, 3, "repeat_", "cols");
  const std::string_view on = luaL_optstring(L, 4, "value"), order = luaL_optstring(L, 5, "rows");
  if (on != "thread" && on != "value") raise("repeat_: copies go on \"thread\" or \"value\" (got '%s')", on.data());
  if (order != "rows" && order != "cols")
    raise("repeat_: copies are numbered \"rows\" or \"cols\" first (got '%s')", order.data());
  push_layout(L, parse_or_raise(l.spec.text + repeat_suffix(rows, cols, on == "thread", order == "rows")), l.dtype);
  return 1;
}

// l:replicate(n) -> n times the threads, thread t + k*threads holding what t holds (TileLang's Fragment.replicate)
int l_replicate(lua_State* L) {
  const LuaLayout& l = check_fragment(L, "replicate");
  push_layout(L, parse_or_raise(l.spec.text + replicate_suffix(check_count(L, 2, "replicate", "n"))), l.dtype);
  return 1;
}

// l:threads() -> threads, values, replication: the fragment's extent (threads counts every replica)
int l_threads(lua_State* L) {
  const Fragment& f = check_fragment(L, "threads").spec.fragment;
  lua_pushinteger(L, f.num_threads());
  lua_pushinteger(L, f.num_values());
  lua_pushinteger(L, f.replication());
  return 3;
}

viz::LayoutGrid grid_of(const LuaLayout& l) {
  auto grid = viz::grid_from_spec(l.spec.text, l.dtype);
  if (!grid) throw std::runtime_error(grid.status().message());
  return std::move(*grid);
}

// l:json() -> the grid `tilelab layout --format json` writes, as a table
int l_json(lua_State* L) {
  push_json(L, viz::to_json(grid_of(check_layout(L, 1))));
  return 1;
}

// l:text() -> the table `tilelab layout --format txt` prints
int l_text(lua_State* L) {
  lua_pushstring(L, viz::to_text(grid_of(check_layout(L, 1))).c_str());
  return 1;
}

// Plot of the layout at `index` with the options table at `opts` {color=, inverse=, title=, cell_size=}.
int plot_layout(lua_State* L, const LuaLayout& l, int opts) {
  check_options(L, opts, "plot");
  viz::LayoutGrid grid = grid_of(l);
  viz::GridStyle style;
  std::string color = opt_string_field(L, opts, "color");
  if (color.empty()) {
    style.color = grid.has_threads() ? viz::ColorBy::thread : viz::ColorBy::bank;
  } else if (auto mode = viz::parse_color_by(color)) {
    style.color = *mode;
  } else {
    raise("plot: unknown color '%s' (thread, warp, value, bank or index)", color.c_str());
  }
  style.title = opt_string_field(L, opts, "title");
  style.cell_size = opt_number_field(L, opts, "cell_size", 0);
  bool inverse = false;
  if (lua_istable(L, opts)) {
    lua_getfield(L, opts, "inverse");
    inverse = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  auto scene = inverse ? viz::build_inverse_scene(grid, style) : viz::build_layout_scene(grid, style);
  if (!scene) throw std::runtime_error(scene.status().message());
  push_plot(L, std::move(*scene), "layout");
  return 1;
}

int l_plot(lua_State* L) { return plot_layout(L, check_layout(L, 1), 2); }

// tl.plot.layout(layout or SPEC [, opts])
int l_plot_layout(lua_State* L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    LuaLayout l{parse_or_raise(lua_tostring(L, 1)), opt_string_field(L, 2, "dtype")};
    return plot_layout(L, l, 2);
  }
  return plot_layout(L, check_layout(L, 1), 2);
}

// The bank analysis of `access` over the smem layout at `index` (a layout object or a SMEM_SPEC string).
viz::BankAnalysis bank_analysis(lua_State* L, int index, int opts) {
  std::string spec;
  std::string dtype;
  if (lua_type(L, index) == LUA_TSTRING) {
    spec = lua_tostring(L, index);
  } else {
    const LuaLayout& l = check_layout(L, index);
    spec = l.spec.text;
    dtype = l.dtype;
  }
  if (lua_type(L, index + 1) != LUA_TSTRING)
    raise("banks: the access pattern must be a string such as \"ldmatrix.x4\" (got %s)", luaL_typename(L, index + 1));
  std::string access = lua_tostring(L, index + 1);
  check_options(L, opts, "banks");
  int elem_bytes = static_cast<int>(opt_number_field(L, opts, "elem_bytes", dtype.empty() ? 0 : dtype_bytes(dtype)));
  auto analysis = viz::analyze_bank_access(spec, access, elem_bytes);
  if (!analysis) throw std::runtime_error(analysis.status().message());
  return std::move(*analysis);
}

// tl.banks(SMEM_SPEC or layout, ACCESS [, {elem_bytes=}]) -> the JSON of `tilelab banks --json` ({wavefronts=,
// ideal_wavefronts=, requests={...}, ...})
int l_banks(lua_State* L) {
  push_json(L, viz::to_json(bank_analysis(L, 1, 3)));
  return 1;
}

// l:banks(ACCESS [, opts]): the same over this layout
int l_layout_banks(lua_State* L) {
  check_layout(L, 1);
  push_json(L, viz::to_json(bank_analysis(L, 1, 3)));
  return 1;
}

// tl.plot.banks(SMEM_SPEC or layout, ACCESS [, opts]) -> plot
int l_plot_banks(lua_State* L) {
  push_plot(L, viz::build_bank_scene(bank_analysis(L, 1, 3).map), "banks");
  return 1;
}

// tl.layouts() -> { {name=, description=}, ... }: every named atom
int l_layouts(lua_State* L) {
  auto atoms = viz::list_layout_atoms();
  lua_createtable(L, static_cast<int>(atoms.size()), 0);
  for (size_t i = 0; i < atoms.size(); ++i) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, atoms[i].name.c_str());
    lua_setfield(L, -2, "name");
    lua_pushstring(L, atoms[i].description.c_str());
    lua_setfield(L, -2, "description");
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int l_tostring(lua_State* L) {
  const LuaLayout& l = check_layout(L, 1);
  std::string text = l.spec.kind == SpecKind::layout ? to_string(l.spec.memory.layout()) : l.spec.text;
  lua_pushfstring(L, "tl.layout(%s)", text.c_str());
  return 1;
}

int l_eq(lua_State* L) {
  const LuaLayout& a = check_layout(L, 1);
  const LuaLayout& b = check_layout(L, 2);
  bool same = a.spec.kind == b.spec.kind &&
              (a.spec.is_fragment() ? a.spec.text == b.spec.text
                                    : a.spec.memory.layout() == b.spec.memory.layout() &&
                                          a.spec.memory.swizzle() == b.spec.memory.swizzle());
  lua_pushboolean(L, same);
  return 1;
}

const luaL_Reg k_methods[] = {
    {"size", guarded<l_size>},
    {"cosize", guarded<l_cosize>},
    {"shape", guarded<l_shape>},
    {"stride", guarded<l_stride>},
    {"rank", guarded<l_rank>},
    {"tile", guarded<l_tile>},
    {"kind", guarded<l_kind>},
    {"at", guarded<l_at>},
    {"owner", guarded<l_owner>},
    {"compose", guarded<l_compose>},
    {"complement", guarded<l_complement>},
    {"coalesce", guarded<l_coalesce>},
    {"filter", guarded<l_filter>},
    {"flatten", guarded<l_flatten>},
    {"divide", guarded<l_divide>},
    {"product", guarded<l_product>},
    {"inverse", guarded<l_inverse>},
    {"mode", guarded<l_mode>},
    {"repeat_", guarded<l_repeat>},
    {"replicate", guarded<l_replicate>},
    {"threads", guarded<l_threads>},
    {"json", guarded<l_json>},
    {"text", guarded<l_text>},
    {"plot", guarded<l_plot>},
    {"banks", guarded<l_layout_banks>},
    {nullptr, nullptr},
};

}  // namespace

void open_layout(lua_State* L, int tl_index) {
  tl_index = lua_absindex(L, tl_index);
  if (new_object_type(L, k_layout_type)) {
    luaL_newlib(L, k_methods);
    lua_setfield(L, -2, "__index");
    const luaL_Reg meta[] = {{"__tostring", guarded<l_tostring>},
                             {"__eq", guarded<l_eq>},
                             {"__call", guarded<l_at>},
                             {nullptr, nullptr}};
    luaL_setfuncs(L, meta, 0);
    set_object_gc<LuaLayout>(L, k_layout_type);
  }
  lua_pop(L, 1);
  lua_pushvalue(L, tl_index);
  const luaL_Reg functions[] = {{"layout", guarded<l_layout>},
                                {"banks", guarded<l_banks>},
                                {"layouts", guarded<l_layouts>},
                                {nullptr, nullptr}};
  luaL_setfuncs(L, functions, 0);
  lua_pop(L, 1);
  push_plot_table(L, tl_index);
  const luaL_Reg plots[] = {{"layout", guarded<l_plot_layout>}, {"banks", guarded<l_plot_banks>}, {nullptr, nullptr}};
  luaL_setfuncs(L, plots, 0);
  lua_pop(L, 1);
}

}  // namespace tl::lua
