// Wall-clock time as TileLab's files and records store it.
#pragma once

#include <string>

namespace tl {

// Now, in UTC, ISO 8601 to the second: "2026-11-25T23:50:01Z" (ceilings' measured_at, profiles' saved_at, the
// results store's run times).
std::string utc_now();

}  // namespace tl
