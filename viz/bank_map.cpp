// BankMap helpers: wavefront assignment, JSON and the conflict table.
#include "viz/bank_map.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace tl::viz {

int BankMap::total_wavefronts() const {
  int n = 0;
  for (const auto& r : requests) n += r.wavefronts;
  return n;
}

int BankMap::total_ideal_wavefronts() const {
  int n = 0;
  for (const auto& r : requests) n += r.ideal_wavefronts;
  return n;
}

void assign_wavefronts(BankRequest& request) {
  std::array<std::set<std::int64_t>, kNumBanks> words;
  for (const auto& a : request.accesses) {
    if (a.bank >= 0 && a.bank < kNumBanks) words[a.bank].insert(a.word);
  }
  bool have_degree = std::any_of(request.degree.begin(), request.degree.end(), [](int d) { return d > 0; });
  int worst = 0;
  for (int b = 0; b < kNumBanks; ++b) {
    if (!have_degree) request.degree[b] = static_cast<int>(words[b].size());
    worst = std::max(worst, static_cast<int>(words[b].size()));
  }
  for (auto& a : request.accesses) {
    if (a.wavefront >= 0 || a.bank < 0 || a.bank >= kNumBanks) continue;
    const auto& w = words[a.bank];
    a.wavefront = static_cast<int>(std::distance(w.begin(), w.find(a.word)));
  }
  if (request.wavefronts <= 0) request.wavefronts = worst;
  if (request.ideal_wavefronts <= 0) {
    std::set<std::int64_t> all;
    for (const auto& a : request.accesses) all.insert(a.word);
    request.ideal_wavefronts = std::max<int>(1, static_cast<int>((all.size() + kNumBanks - 1) / kNumBanks));
  }
}

nlohmann::json to_json(const BankMap& map) {
  nlohmann::json requests = nlohmann::json::array();
  for (const auto& r : map.requests) {
    nlohmann::json accesses = nlohmann::json::array();
    for (const auto& a : r.accesses) {
      accesses.push_back({{"thread", a.thread}, {"bank", a.bank}, {"word", a.word}, {"wavefront", a.wavefront}});
    }
    requests.push_back({{"label", r.label},
                        {"wavefronts", r.wavefronts},
                        {"ideal_wavefronts", r.ideal_wavefronts},
                        {"bank_degree", r.degree},
                        {"accesses", std::move(accesses)}});
  }
  int total = map.total_wavefronts(), ideal = map.total_ideal_wavefronts();
  return {{"title", map.title},
          {"elem_bytes", map.elem_bytes},
          {"wavefronts", total},
          {"ideal_wavefronts", ideal},
          {"conflict_factor", ideal > 0 ? static_cast<double>(total) / ideal : 0.0},
          {"requests", std::move(requests)}};
}

std::string to_text(const BankMap& map) {
  std::ostringstream out;
  if (!map.title.empty()) out << map.title << '\n';
  char line[256];
  std::snprintf(line, sizeof(line), "%-28s %10s %6s %8s %s\n", "request", "wavefronts", "ideal", "conflict",
                "worst bank");
  out << line;
  for (const auto& r : map.requests) {
    auto worst = std::max_element(r.degree.begin(), r.degree.end());
    double factor = r.ideal_wavefronts > 0 ? static_cast<double>(r.wavefronts) / r.ideal_wavefronts : 0;
    std::snprintf(line, sizeof(line), "%-28s %10d %6d %7.2fx bank %d (%d words)\n", r.label.c_str(), r.wavefronts,
                  r.ideal_wavefronts, factor, static_cast<int>(worst - r.degree.begin()), *worst);
    out << line;
  }
  int total = map.total_wavefronts(), ideal = map.total_ideal_wavefronts();
  std::snprintf(line, sizeof(line), "%-28s %10d %6d %7.2fx%s\n", "total", total, ideal,
                ideal > 0 ? static_cast<double>(total) / ideal : 0.0,
                total > ideal ? "  (bank conflicts)" : "  (conflict-free)");
  out << line;
  for (const auto& r : map.requests) {
    out << "\nbank degree, " << r.label << ":\n";
    for (int b = 0; b < kNumBanks; ++b) {
      std::snprintf(line, sizeof(line), "%3d", b);
      out << line;
    }
    out << '\n';
    for (int b = 0; b < kNumBanks; ++b) {
      std::snprintf(line, sizeof(line), "%3d", r.degree[b]);
      out << line;
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace tl::viz
