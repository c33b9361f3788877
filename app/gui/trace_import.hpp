// Reads a Chrome trace (ours from `tilelab timeline --out x.json`, or any traceEvents JSON) back into a Timeline.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "runtime/status.hpp"
#include "runtime/timeline.hpp"

namespace tl::gui {

// "X" (complete) and "i"/"I" (instant) events become events, "B"/"E" pairs intervals; names become regions (ours in
// otherData.regions order). Tracks: our traces carry block/warp in args and the SM as pid - 1; other traces get
// one track per (pid, tid). Errors (parse) when there is no traceEvents array or no event it can use.
Result<Timeline> timeline_from_chrome_trace(const nlohmann::json& trace);
Result<Timeline> load_chrome_trace(const std::string& path);

}  // namespace tl::gui
