// Problems drawn at random from a kernel's problem schema (`tilelab test --random`): shapes nobody listed, biased
// toward the edges where kernels break (the minimum and the one after it, small odd and prime sizes, powers of two
// and their neighbours, the default, parameters left unset so defaults and default_from followers run), each
// instantiated at the given config and kept under a byte and FLOP budget so its float64 check stays fast.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/spec/kernel_spec.hpp"

namespace tl {

// The fixed seed `tilelab test --random` uses unless given one (printed with every run, so a failure replays).
inline constexpr std::uint64_t kDefaultDrawSeed = 20261127;

struct DrawOptions {
  std::uint64_t max_bytes = 256ull << 20;  // an accepted draw's tensors (every tensor argument), summed
  double max_flops = 4e9;                  // an accepted draw's KernelSpec::flops
  int max_redraws = 400;                   // draws over the budget thrown away before one gives up (refused)
};

struct DrawnProblem {
  // The parameters the draw set, in `--problem` syntax by kv; the others are left unset (their defaults and
  // default_from followers decide).
  std::map<std::string, std::string> given;
  // ok: it instantiates at the config within the budget. Else the code and message of why not: the schema's
  // resolve (a default_from value outside the follower's range), can_implement, or the budget when every redraw
  // stayed over it (over_budget; code unsupported).
  ErrorCode refused_code = ErrorCode::ok;
  std::string refused;
  bool over_budget = false;
  std::uint64_t bytes = 0;  // accepted: its tensors' bytes
  double flops = 0;         // accepted: its FLOPs
  int redraws = 0;          // draws over the budget thrown away before this one

  bool accepted() const { return refused_code == ErrorCode::ok; }
};

// One kernel's seed: the run's seed mixed with the kernel's name, so `--kernel K` draws what a run over every
// kernel drew for K.
std::uint64_t kernel_draw_seed(std::uint64_t seed, const std::string& kernel);

// The values an int parameter without choices is biased toward, in its range: min, min+1, min+2, small odd and
// prime sizes, powers of two and their neighbours up to `cap`, the default, and max when it is no larger than cap.
std::vector<std::int64_t> edge_values(const ParamSpec& p, std::int64_t cap);

// Problems of `spec`'s problem schema from `seed` (the same seed, spec, config and limits draw the same problems),
// each instantiated at `config` against `limits`, until `n` are accepted or 4n were drawn: a draw over the budget
// is drawn again; one the spec refuses is kept, with its reason, between the accepted ones.
std::vector<DrawnProblem> draw_problems(const KernelSpec& spec, int n, std::uint64_t seed,
                                        const std::map<std::string, std::string>& config, const DeviceLimits& limits,
                                        const DrawOptions& options = {});

// How `tilelab test` reads the error of preparing `kernel` on a problem: a schema or can_implement refusal with a
// reason is "refused: <reason>" (reported, not a failure); anything else is nullopt (a failure), a refusal without
// a reason included: one whose message is empty or only the kernel's name that instantiate prefixes ("K: ").
std::optional<std::string> refusal_text(const Status& status, const std::string& kernel);
// Whether the message says something once the "K: " prefix instantiate adds is taken off.
bool has_reason(const std::string& message, const std::string& kernel);

}  // namespace tl
