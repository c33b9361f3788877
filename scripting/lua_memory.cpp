// The counting allocator behind --max-memory: refuses what would pass the limit, so Lua raises "not enough memory".
#include "scripting/lua_memory.hpp"

#include <cstdlib>

extern "C" {
#include <lua.h>
}

namespace tl::lua {

void* MemoryBudget::allocate(void* ud, void* ptr, std::size_t old_size, std::size_t new_size) {
  auto* budget = static_cast<MemoryBudget*>(ud);
  if (!ptr) old_size = 0;  // for a new block Lua passes the object's type here, not a size
  if (new_size == 0) {
    std::free(ptr);
    budget->used -= old_size;
    return nullptr;
  }
  if (new_size > old_size && budget->used + (new_size - old_size) > budget->limit) {
    // The first refusal makes Lua collect its garbage and ask again with the same request; only a second refusal
    // in a row means the script really holds too much.
    if (!budget->exceeded && !budget->refused_once) {
      budget->refused_once = true;
      return nullptr;
    }
    budget->refused_once = false;
    // A binding gets its block (no memory error may longjmp through its C++ frames), and so does a script already
    // past the limit (its error message and traceback need room while it stops): up to twice the limit.
    const std::size_t cap = budget->limit > SIZE_MAX / 2 ? SIZE_MAX : 2 * budget->limit;
    const bool granted = (budget->in_binding || budget->exceeded) && budget->used + (new_size - old_size) <= cap;
    budget->exceeded = true;
    if (!granted) return nullptr;
  }
  void* block = std::realloc(ptr, new_size);
  if (!block) return nullptr;
  budget->refused_once = false;
  budget->used = budget->used - old_size + new_size;
  return block;
}

std::string MemoryBudget::stop_message() const {
  return "not enough memory: the script ran past its memory limit (--max-memory " + std::to_string(limit_mib) +
         " MiB; raise it with --max-memory N)";
}

MemoryBudget* memory_budget(lua_State* L) {
  void* ud = nullptr;
  return lua_getallocf(L, &ud) == &MemoryBudget::allocate ? static_cast<MemoryBudget*>(ud) : nullptr;
}

}  // namespace tl::lua
