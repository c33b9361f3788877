// write_file_atomic and the temporary-then-rename steps it is made of.
#include "runtime/core/files.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

namespace tl {
namespace fs = std::filesystem;

std::string temp_path_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

Status commit_temp_file(const std::string& temp, const std::string& path) {
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (!ec) return Status::success();
  discard_temp_file(temp);
  return make_error(ErrorCode::io, "cannot write " + path + ": " + ec.message());
}

void discard_temp_file(const std::string& temp) {
  std::error_code ec;
  fs::remove(temp, ec);
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (fs::is_directory(p, ec)) return make_error(ErrorCode::io, "cannot write " + path + ": it is a directory");
  const std::string temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorCode::io, "cannot write " + path + ": cannot create a file in its directory");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      discard_temp_file(temp);
      return make_error(ErrorCode::io, "writing " + path + " failed (disk full?); the file is unchanged");
    }
  }
  return commit_temp_file(temp, path);
}

}  // namespace tl
