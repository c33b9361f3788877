// Logging implementation: one mutex so lines from worker threads do not interleave.
#include "runtime/core/log.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace tl::log {
namespace {

Level initial_level() {
  const char* env = std::getenv("TILELAB_LOG");
  if (!env) return Level::warn;
  if (!std::strcmp(env, "debug")) return Level::debug;
  if (!std::strcmp(env, "info")) return Level::info;
  if (!std::strcmp(env, "error")) return Level::error;
  if (!std::strcmp(env, "off")) return Level::off;
  return Level::warn;
}

std::atomic<Level> g_level{initial_level()};
std::mutex g_mutex;

}  // namespace

void set_level(Level lvl) { g_level = lvl; }
Level level() { return g_level; }

void write(Level lvl, const std::string& message) {
  static const char* names[] = {"debug", "info", "warning", "error", ""};
  std::lock_guard lock(g_mutex);
  std::cerr << "tilelab: " << names[static_cast<int>(lvl)] << ": " << message << '\n';
}

}  // namespace tl::log
