// Wall-clock time as TileLab's files and records store it.
#include "runtime/core/clock.hpp"

#include <ctime>

namespace tl {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tl
