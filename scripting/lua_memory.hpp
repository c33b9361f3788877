// The memory limit of a script (--max-memory): a counting Lua allocator and the bookkeeping the bindings share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct lua_State;

namespace tl::lua {

struct MemoryBudget {
  std::size_t used = 0;                // bytes Lua holds now
  std::size_t limit = SIZE_MAX;        // enforced from when the script starts (the runner sets it)
  std::uint64_t limit_mib = 0;         // --max-memory as the user gave it, for messages
  // A `tl` binding is running: C++ frames sit between Lua and the allocation, and a memory error would longjmp past
  // their destructors (and past a sweep's threads). Its allocations may go on up to twice the limit; the script
  // stops as soon as the binding returns.
  bool in_binding = false;
  // An allocation went past the limit: sticky, the script is being stopped (and may take up to twice the limit
  // for its error message and traceback).
  bool exceeded = false;
  bool refused_once = false;  // the last growth was refused; Lua collects garbage and asks once more

  // The Lua allocator (lua_Alloc) over a MemoryBudget.
  static void* allocate(void* ud, void* ptr, std::size_t old_size, std::size_t new_size);
  // The reason the script stops, for the runner and the bindings.
  std::string stop_message() const;
};

// The budget of a state made by the runner, or nullptr (a state with another allocator).
MemoryBudget* memory_budget(lua_State* L);

}  // namespace tl::lua
