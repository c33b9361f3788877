// The source tree's include structure: the runtime's rooms used one way, families apart, no module cycles.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = TL_SOURCE_DIR;

// The runtime's rooms, lowest first: a room includes only itself and the rooms before it (README, Layout).
const std::vector<std::string> kRooms = {"core", "device", "jit", "trace", "spec", "worker", "results", "measure"};
// Top-level areas, lowest first: an area never includes one after it.
const std::vector<std::string> kAreas = {"tile", "runtime", "family", "library", "session", "viz", "scripting", "app"};

struct Source {
  std::string path;  // relative to the root: "kernels/runtime/jit/jit.cpp"
  std::vector<std::string> includes;  // resolved the same way, project files only
};

std::string rel(const fs::path& p) { return fs::relative(p, kRoot).generic_string(); }

// `#include "X"` resolves against kernels/ (tile/, runtime/, library/, session/, the families), the root (viz/,
// scripting/, app/) or the including file's folder.
std::string resolve(const fs::path& from, const std::string& inc) {
  for (const fs::path& base : {kRoot / "kernels", kRoot, from.parent_path()})
    if (fs::exists(base / inc)) return rel(base / inc);
  return "";
}

std::vector<Source> scan() {
  static const std::regex include_re(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::vector<Source> out;
  for (const char* top : {"kernels", "viz", "scripting", "app"}) {
    for (const auto& e : fs::recursive_directory_iterator(kRoot / top)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      Source s{rel(e.path()), {}};
      std::ifstream in(e.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line))
        if (std::regex_search(line, m, include_re)) {
          std::string r = resolve(e.path(), m[1].str());
          if (!r.empty()) s.includes.push_back(r);
        }
      out.push_back(std::move(s));
    }
  }
  return out;
}

// "kernels/runtime/jit/jit.cpp" -> area "runtime", room "jit"; "kernels/gemm/x.cuh" -> "family", family "gemm".
struct Place {
  std::string area, sub;
};
Place place_of(const std::string& path) {
  const auto parts = [&] {
    std::vector<std::string> v;
    for (const auto& p : fs::path(path)) v.push_back(p.string());
    return v;
  }();
  if (parts[0] != "kernels") return {parts[0], ""};
  if (parts[1] == "runtime") return {"runtime", parts.size() > 3 ? parts[2] : ""};
  if (parts[1] == "tile" || parts[1] == "library" || parts[1] == "session") return {parts[1], ""};
  return {"family", parts[1]};
}

int rank(const std::vector<std::string>& order, const std::string& name) {
  auto it = std::find(order.begin(), order.end(), name);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

// A module is a file without its extension (x.hpp and x.cpp are one).
std::string module_of(const std::string& path) { return fs::path(path).replace_extension().generic_string(); }

TEST(Includes, ScanFindsTheTree) {
  const auto sources = scan();
  EXPECT_GT(sources.size(), 100u);
  std::set<std::string> rooms;
  for (const auto& s : sources)
    if (place_of(s.path).area == "runtime") rooms.insert(place_of(s.path).sub);
  for (const auto& r : kRooms) EXPECT_TRUE(rooms.count(r)) << "no room kernels/runtime/" << r;
  for (const auto& r : rooms) EXPECT_GE(rank(kRooms, r), 0) << "kernels/runtime/" << r << " is in no room";
}

TEST(Includes, AreasAndRoomsRunOneWay) {
  for (const auto& s : scan()) {
    const Place from = place_of(s.path);
    for (const auto& inc : s.includes) {
      const Place to = place_of(inc);
      EXPECT_LE(rank(kAreas, to.area), rank(kAreas, from.area)) << s.path << " includes " << inc;
      if (from.area == "runtime" && to.area == "runtime")
        EXPECT_LE(rank(kRooms, to.sub), rank(kRooms, from.sub)) << s.path << " (room " << from.sub << ") includes "
                                                                << inc << " (room " << to.sub << ")";
      if (from.area == "family" && to.area == "family")
        EXPECT_EQ(from.sub, to.sub) << s.path << " includes another family's " << inc;
      // Device code (a family's .cuh and plan headers) is compiled by NVRTC from tile/ and its own family alone.
      const bool device = from.area == "family" && fs::path(s.path).extension() != ".cpp";
      if (device) EXPECT_TRUE(to.area == "tile" || to.area == "family") << s.path << " (device code) includes " << inc;
    }
  }
}

TEST(Includes, NoModuleCycles) {
  std::map<std::string, std::set<std::string>> edges;
  for (const auto& s : scan())
    for (const auto& inc : s.includes)
      if (module_of(inc) != module_of(s.path)) edges[module_of(s.path)].insert(module_of(inc));
  std::map<std::string, int> state;  // 0 unseen, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::vector<std::string> cycles;
  std::function<void(const std::string&)> visit = [&](const std::string& m) {
    state[m] = 1;
    stack.push_back(m);
    for (const auto& n : edges[m]) {
      if (state[n] == 1) {
        std::string c;
        for (auto it = std::find(stack.begin(), stack.end(), n); it != stack.end(); ++it) c += *it + " -> ";
        cycles.push_back(c + n);
      } else if (state[n] == 0) {
        visit(n);
      }
    }
    stack.pop_back();
    state[m] = 2;
  };
  for (const auto& [m, _] : edges)
    if (state[m] == 0) visit(m);
  for (const auto& c : cycles) ADD_FAILURE() << "include cycle: " << c;
}

}  // namespace
