// WorkerChannel: progress messages framed onto the worker's output.
#include "runtime/worker/channel.hpp"

namespace tl {

Status WorkerChannel::progress(nlohmann::json fields, std::vector<Blob> blobs) {
  Message m = make_progress(m_id, std::move(fields));
  m.blobs = std::move(blobs);
  return write_frame(m_fd, m);
}

}  // namespace tl
