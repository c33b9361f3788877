// The worker protocol: length-prefixed frames of a JSON header plus binary blobs, over the worker's stdin/stdout.
#pragma once

// Frame layout (little-endian):
//   "TLWK"  u32 header_bytes  u32 blob_count  u64 blob_bytes[blob_count]  header JSON  blob 0  blob 1 ...
// The header is a JSON object with at least "type":
//   hello     worker → parent at start: {"protocol", "tilelab", "pid"}; parent → worker: {"protocol", "tilelab"}
//   ready     worker → parent: the parent's hello was accepted
//   request   parent → worker: {"id", "kind", ...kind-specific fields}
//   progress  worker → parent: {"id", ...}: zero or more per request (a sweep streams one per item)
//   reply     worker → parent: {"id", "ok": true, ...} or {"id", "ok": false, "error": {"code", "message"},
//             "fatal": true when the worker exits right after (a sticky CUDA error poisoned its context)}
// Binary payloads (cubins, buffer samples) travel as blobs, referred to by index from the header.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"

namespace tl {

// Bump on any incompatible change of frames or of a request/reply's fields.
inline constexpr int kWorkerProtocolVersion = 3;  // 2: launch timeline (probe build + buffer); 3: timing.timer

inline constexpr char kFrameMagic[4] = {'T', 'L', 'W', 'K'};
inline constexpr std::uint32_t kMaxHeaderBytes = 64u << 20;
inline constexpr std::uint32_t kMaxBlobs = 4096;
inline constexpr std::uint64_t kMaxBlobBytes = 64ull << 30;

using Blob = std::vector<std::uint8_t>;

struct Message {
  nlohmann::json header = nlohmann::json::object();
  std::vector<Blob> blobs;

  std::string type() const { return header.value("type", std::string()); }
  std::uint64_t id() const { return header.value("id", std::uint64_t{0}); }
  // Adds a blob and returns its index, for the header to refer to.
  int add_blob(Blob b) {
    blobs.push_back(std::move(b));
    return static_cast<int>(blobs.size() - 1);
  }
  // The blob at header[key], or an error naming the key.
  Result<const Blob*> blob_at(const std::string& key) const;
};

// The bytes of one frame.
Blob encode_frame(const Message& m);

// Incremental decoder: feed bytes as they arrive; next() yields complete messages. A malformed frame
// (bad magic, sizes over the limits, a header that is not a JSON object) is an error and poisons the
// decoder: the stream cannot be resynchronised.
class FrameDecoder {
 public:
  void feed(const std::uint8_t* data, std::size_t size);
  // A message, std::nullopt when more bytes are needed, or a parse error.
  Result<std::optional<Message>> next();
  // Bytes of an incomplete frame still buffered (at EOF: the peer died mid-frame when this is > 0).
  std::size_t pending() const { return m_buffer.size() - m_pos; }
  void reset();

 private:
  std::vector<std::uint8_t> m_buffer;
  std::size_t m_pos = 0;
  std::string m_error;
};

// Blocking whole-frame I/O on a file descriptor (the worker's side; the parent adds deadlines itself).
Status write_frame(int fd, const Message& m);
// The next message; not_found at a clean end of stream; parse at a malformed or truncated frame.
Result<Message> read_frame(int fd, FrameDecoder& decoder);

// Builders for the common headers.
Message make_request(std::string kind, nlohmann::json fields = nlohmann::json::object());
Message make_reply(std::uint64_t id, nlohmann::json fields = nlohmann::json::object());
Message make_error_reply(std::uint64_t id, const Status& error, bool fatal = false);
Message make_progress(std::uint64_t id, nlohmann::json fields = nlohmann::json::object());

// The error record in a failed reply, back to a Status.
Status status_from_json(const nlohmann::json& error);
nlohmann::json status_to_json(const Status& s);
Result<ErrorCode> parse_error_code(const std::string& name);

}  // namespace tl
