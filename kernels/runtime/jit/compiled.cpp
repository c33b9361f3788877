// JSON form of the ptxas resource report (kept in the cache's metadata and in run records).
#include "runtime/jit/compiled.hpp"

#include <nlohmann/json.hpp>

namespace tl {

void to_json(nlohmann::json& j, const ResourceUsage& r) {
  j = {{"registers", r.registers},           {"shared_static_bytes", r.shared_static_bytes},
       {"spill_store_bytes", r.spill_store_bytes}, {"spill_load_bytes", r.spill_load_bytes},
       {"stack_frame_bytes", r.stack_frame_bytes}, {"barriers", r.barriers},
       {"const_bytes", r.const_bytes},          {"source", r.source}};
}

void from_json(const nlohmann::json& j, ResourceUsage& r) {
  r.registers = j.at("registers").get<int>();
  r.shared_static_bytes = j.at("shared_static_bytes").get<int>();
  r.spill_store_bytes = j.at("spill_store_bytes").get<int>();
  r.spill_load_bytes = j.at("spill_load_bytes").get<int>();
  r.stack_frame_bytes = j.at("stack_frame_bytes").get<int>();
  r.barriers = j.at("barriers").get<int>();
  r.const_bytes = j.at("const_bytes").get<int>();
  r.source = j.at("source").get<std::string>();
}

}  // namespace tl
