// Whole-file writes that never leave a truncated file behind: a temporary next to the target, then a rename.
#pragma once

#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace tl {

// Writes `bytes` to `path` (creating its directory): a reader, a crash or a full disk leaves the old file or the
// whole new one, never a part of it. Errors (io) name the file.
Status write_file_atomic(const std::string& path, std::string_view bytes);

// For writers that open the path themselves (cairo's SVG/PDF surfaces): a unique temporary path next to `path`;
// then commit_temp_file moves it into place, or discard_temp_file removes it when the write failed.
std::string temp_path_for(const std::string& path);
Status commit_temp_file(const std::string& temp, const std::string& path);
void discard_temp_file(const std::string& temp);

}  // namespace tl
