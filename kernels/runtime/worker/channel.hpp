// What a request handler in the worker streams its progress through (a sweep's results, a ceilings benchmark's).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/worker/protocol.hpp"

namespace tl {

// Sends progress messages for the request being served.
class WorkerChannel {
 public:
  WorkerChannel(int out_fd, std::uint64_t id) : m_fd(out_fd), m_id(id) {}
  std::uint64_t id() const { return m_id; }
  Status progress(nlohmann::json fields, std::vector<Blob> blobs = {});

 private:
  int m_fd;
  std::uint64_t m_id;
};

}  // namespace tl
