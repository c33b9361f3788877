// SourceSet: embedded or directory-backed kernel sources, and the textual #include closure of one of them.
#include "runtime/jit/sources.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tl {
namespace fs = std::filesystem;

SourceSet SourceSet::from_directory(std::string dir) {
  SourceSet s;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  s.m_dir = std::move(dir);
  return s;
}

SourceSet SourceSet::from_embedded(const EmbeddedSource* files, std::size_t count) {
  SourceSet s;
  for (std::size_t i = 0; i < count; ++i)
    s.m_files.emplace(files[i].name, std::string(reinterpret_cast<const char*>(files[i].data), files[i].size));
  return s;
}

void SourceSet::add(std::string name, std::string text) { m_overlay[std::move(name)] = std::move(text); }

Result<std::string> SourceSet::read(const std::string& name) const {
  if (auto it = m_overlay.find(name); it != m_overlay.end()) return it->second;
  if (!m_dir.empty()) {
    if (name.find("..") != std::string::npos)
      return make_error(ErrorCode::invalid_argument, "source name '" + name + "' leaves the kernels directory");
    fs::path p = fs::path(m_dir) / name;
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(ErrorCode::not_found, "no kernel source '" + name + "' in " + m_dir);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (auto it = m_files.find(name); it != m_files.end()) return it->second;
  return make_error(ErrorCode::not_found, "no kernel source '" + name + "' in the embedded sources");
}

bool SourceSet::contains(const std::string& name) const {
  if (m_overlay.count(name)) return true;
  if (!m_dir.empty()) {
    std::error_code ec;
    return name.find("..") == std::string::npos && fs::is_regular_file(fs::path(m_dir) / name, ec);
  }
  return m_files.count(name) > 0;
}

std::vector<std::string> SourceSet::names() const {
  std::set<std::string> out;
  for (const auto& [n, _] : m_overlay) out.insert(n);
  if (!m_dir.empty()) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(m_dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      auto ext = it->path().extension().string();
      if (ext == ".cuh" || ext == ".hpp" || ext == ".h") out.insert(fs::relative(it->path(), m_dir).generic_string());
    }
  } else {
    for (const auto& [n, _] : m_files) out.insert(n);
  }
  return {out.begin(), out.end()};
}

std::string SourceSet::display_path(const std::string& name) const {
  if (m_overlay.count(name)) return name;
  if (!m_dir.empty()) return m_dir + "/" + name;
  return "kernels/" + name;
}

std::string SourceSet::describe() const {
  if (!m_dir.empty()) return "directory " + m_dir;
  return "embedded (" + std::to_string(m_files.size()) + " files)";
}

namespace {

// Names in `#include "x"` / `#include <x>` lines, in order.
std::vector<std::string> scan_includes(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) continue;
    char close = line[i] == '"' ? '"' : '>';
    std::size_t end = line.find(close, i + 1);
    if (end == std::string::npos) continue;
    out.push_back(line.substr(i + 1, end - i - 1));
  }
  return out;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> include_closure(const SourceSet& set,
                                                                         const std::string& main) {
  auto main_text = set.read(main);
  if (!main_text) return main_text.status();
  std::map<std::string, std::string> found;
  std::vector<std::string> todo = scan_includes(*main_text);
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    if (name == main || found.count(name) || !set.contains(name)) continue;
    auto text = set.read(name);
    if (!text) return text.status();
    for (auto& inc : scan_includes(*text)) todo.push_back(std::move(inc));
    found.emplace(std::move(name), std::move(*text));
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back(main, std::move(*main_text));
  for (auto& [n, t] : found) out.emplace_back(n, std::move(t));
  return out;
}

}  // namespace tl
