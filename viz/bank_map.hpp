// BankMap: a neutral record of shared-memory bank analysis (per request: wavefronts, the ideal, the
// degree of each bank, which thread touched which bank), with its JSON form and conflict table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::viz {

inline constexpr int kNumBanks = 32;

// One 4-byte word a thread touches in one request.
struct BankAccess {
  int thread = 0;
  int bank = 0;
  std::int64_t word = -1;  // byte address / 4; threads touching the same word share a wavefront (broadcast)
  int wavefront = -1;      // which wavefront serves it; -1: let assign_wavefronts() decide
};

// One instruction's request (or one phase of it, when the hardware splits it).
struct BankRequest {
  std::string label;
  int wavefronts = 0;         // wavefronts the request takes
  int ideal_wavefronts = 0;   // with no conflicts: bytes moved / 128 rounded up
  std::array<int, kNumBanks> degree{};  // distinct words each bank serves
  std::vector<BankAccess> accesses;
};

struct BankMap {
  std::string title;  // the layout and access pattern
  int elem_bytes = 0;
  std::vector<BankRequest> requests;

  int total_wavefronts() const;
  int total_ideal_wavefronts() const;
};

// Fills missing wavefront numbers (a bank's k-th distinct word goes in wavefront k) and, when the request
// has no degree or wavefront count, derives them from the accesses.
void assign_wavefronts(BankRequest& request);

// {"title", "elem_bytes", "wavefronts", "ideal_wavefronts", "conflict_factor", "requests": [{"label",
// "wavefronts", "ideal_wavefronts", "bank_degree": [32], "accesses": [{"thread", "bank", "word",
// "wavefront"}]}]}.
nlohmann::json to_json(const BankMap& map);

// The conflict table: a line per request (wavefronts vs ideal, worst bank) and the per-bank degrees.
std::string to_text(const BankMap& map);

}  // namespace tl::viz
