// Minimal leveled logging to stderr; the level comes from TILELAB_LOG or --verbose.
#pragma once

#include <sstream>
#include <string>

namespace tl::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

void set_level(Level level);
Level level();
void write(Level level, const std::string& message);

template <class... Args>
void emit(Level lvl, const Args&... args) {
  if (lvl < level()) return;
  std::ostringstream os;
  (os << ... << args);
  write(lvl, os.str());
}

template <class... Args> void debug(const Args&... a) { emit(Level::debug, a...); }
template <class... Args> void info(const Args&... a) { emit(Level::info, a...); }
template <class... Args> void warn(const Args&... a) { emit(Level::warn, a...); }
template <class... Args> void error(const Args&... a) { emit(Level::error, a...); }

}  // namespace tl::log
