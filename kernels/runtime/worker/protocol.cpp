// Frame encoding/decoding for the worker protocol, and blocking frame I/O for the worker side.
#include "runtime/worker/protocol.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tl {

namespace {

void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Blob frame_prefix(const Message& m, const std::string& header) {
  std::size_t fixed = 12 + 8 * m.blobs.size();
  Blob out(fixed + header.size());
  std::memcpy(out.data(), kFrameMagic, 4);
  put_u32(out.data() + 4, static_cast<std::uint32_t>(header.size()));
  put_u32(out.data() + 8, static_cast<std::uint32_t>(m.blobs.size()));
  for (std::size_t i = 0; i < m.blobs.size(); ++i) put_u64(out.data() + 12 + 8 * i, m.blobs[i].size());
  if (!header.empty()) std::memcpy(out.data() + fixed, header.data(), header.size());
  return out;
}

Status write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::io, std::string("writing a frame: ") + std::strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

Result<const Blob*> Message::blob_at(const std::string& key) const {
  auto it = header.find(key);
  if (it == header.end() || !it->is_number_integer())
    return make_error(ErrorCode::parse, "message has no blob index '" + key + "'");
  auto index = it->get<std::int64_t>();
  if (index < 0 || index >= static_cast<std::int64_t>(blobs.size()))
    return make_error(ErrorCode::parse, "blob index '" + key + "' = " + std::to_string(index) + " is out of range (" +
                                            std::to_string(blobs.size()) + " blobs)");
  return &blobs[static_cast<std::size_t>(index)];
}

Blob encode_frame(const Message& m) {
  std::string header = m.header.dump();
  Blob out = frame_prefix(m, header);
  for (const auto& b : m.blobs) out.insert(out.end(), b.begin(), b.end());
  return out;
}

void FrameDecoder::feed(const std::uint8_t* data, std::size_t size) {
  // Compact consumed bytes now and then so a long stream does not grow the buffer without bound.
  if (m_pos > 0 && m_pos == m_buffer.size()) {
    m_buffer.clear();
    m_pos = 0;
  } else if (m_pos > (1u << 20) && m_pos * 2 > m_buffer.size()) {
    m_buffer.erase(m_buffer.begin(), m_buffer.begin() + static_cast<std::ptrdiff_t>(m_pos));
    m_pos = 0;
  }
  m_buffer.insert(m_buffer.end(), data, data + size);
}

void FrameDecoder::reset() {
  m_buffer.clear();
  m_pos = 0;
  m_error.clear();
}

Result<std::optional<Message>> FrameDecoder::next() {
  if (!m_error.empty()) return make_error(ErrorCode::parse, m_error);
  auto fail = [&](std::string why) -> Result<std::optional<Message>> {
    m_error = "malformed frame from the worker: " + why;
    return make_error(ErrorCode::parse, m_error);
  };
  std::size_t avail = m_buffer.size() - m_pos;
  if (avail == 0) return std::optional<Message>{};
  const std::uint8_t* p = m_buffer.data() + m_pos;
  if (avail < 4) {
    // Reject a wrong magic as early as its first byte, so garbage does not wait for more input.
    if (std::memcmp(p, kFrameMagic, avail) != 0) return fail("bad magic");
    return std::optional<Message>{};
  }
  if (std::memcmp(p, kFrameMagic, 4) != 0) {
    char shown[64];
    std::snprintf(shown, sizeof(shown), "bad magic %02x %02x %02x %02x (expected \"TLWK\")", p[0], p[1], p[2], p[3]);
    return fail(shown);
  }
  if (avail < 12) return std::optional<Message>{};
  std::uint32_t header_bytes = get_u32(p + 4);
  std::uint32_t blob_count = get_u32(p + 8);
  if (header_bytes > kMaxHeaderBytes)
    return fail("header of " + std::to_string(header_bytes) + " bytes exceeds the limit of " +
                std::to_string(kMaxHeaderBytes));
  if (blob_count > kMaxBlobs)
    return fail(std::to_string(blob_count) + " blobs exceed the limit of " + std::to_string(kMaxBlobs));
  std::size_t prefix = 12 + 8ull * blob_count;
  if (avail < prefix) return std::optional<Message>{};
  std::uint64_t total = prefix + header_bytes;
  std::vector<std::uint64_t> sizes(blob_count);
  for (std::uint32_t i = 0; i < blob_count; ++i) {
    sizes[i] = get_u64(p + 12 + 8ull * i);
    if (sizes[i] > kMaxBlobBytes)
      return fail("blob of " + std::to_string(sizes[i]) + " bytes exceeds the limit of " + std::to_string(kMaxBlobBytes));
    total += sizes[i];
  }
  if (avail < total) return std::optional<Message>{};

  Message m;
  const char* header = reinterpret_cast<const char*>(p + prefix);
  m.header = nlohmann::json::parse(header, header + header_bytes, nullptr, /*allow_exceptions=*/false);
  if (m.header.is_discarded()) return fail("the header is not valid JSON");
  if (!m.header.is_object() || !m.header.contains("type") || !m.header["type"].is_string())
    return fail("the header is not an object with a \"type\"");
  const std::uint8_t* blob = p + prefix + header_bytes;
  m.blobs.reserve(blob_count);
  for (std::uint32_t i = 0; i < blob_count; ++i) {
    m.blobs.emplace_back(blob, blob + sizes[i]);
    blob += sizes[i];
  }
  m_pos += total;
  return std::optional<Message>{std::move(m)};
}

Status write_frame(int fd, const Message& m) {
  std::string header = m.header.dump();
  Blob prefix = frame_prefix(m, header);
  TL_RETURN_IF_ERROR(write_all(fd, prefix.data(), prefix.size()));
  for (const auto& b : m.blobs) TL_RETURN_IF_ERROR(write_all(fd, b.data(), b.size()));
  return {};
}

Result<Message> read_frame(int fd, FrameDecoder& decoder) {
  std::uint8_t buf[1 << 16];
  for (;;) {
    auto next = decoder.next();
    if (!next) return next.status();
    if (next->has_value()) return std::move(**next);
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::io, std::string("reading a frame: ") + std::strerror(errno));
    }
    if (n == 0) {
      if (decoder.pending() > 0)
        return make_error(ErrorCode::parse, "the stream ended in the middle of a frame (" +
                                                std::to_string(decoder.pending()) + " bytes of it arrived)");
      return make_error(ErrorCode::not_found, "end of stream");
    }
    decoder.feed(buf, static_cast<std::size_t>(n));
  }
}

Message make_request(std::string kind, nlohmann::json fields) {
  Message m;
  m.header = fields.is_object() ? std::move(fields) : nlohmann::json::object();
  m.header["type"] = "request";
  m.header["kind"] = std::move(kind);
  return m;
}

Message make_reply(std::uint64_t id, nlohmann::json fields) {
  Message m;
  m.header = fields.is_object() ? std::move(fields) : nlohmann::json::object();
  m.header["type"] = "reply";
  m.header["id"] = id;
  m.header["ok"] = true;
  return m;
}

Message make_error_reply(std::uint64_t id, const Status& error, bool fatal) {
  Message m;
  m.header = {{"type", "reply"}, {"id", id}, {"ok", false}, {"error", status_to_json(error)}};
  if (fatal) m.header["fatal"] = true;
  return m;
}

Message make_progress(std::uint64_t id, nlohmann::json fields) {
  Message m;
  m.header = fields.is_object() ? std::move(fields) : nlohmann::json::object();
  m.header["type"] = "progress";
  m.header["id"] = id;
  return m;
}

Result<ErrorCode> parse_error_code(const std::string& name) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::internal); ++c)
    if (name == error_code_name(static_cast<ErrorCode>(c))) return static_cast<ErrorCode>(c);
  return make_error(ErrorCode::parse, "unknown error code '" + name + "'");
}

nlohmann::json status_to_json(const Status& s) {
  return {{"code", error_code_name(s.code())}, {"message", s.message()}};
}

Status status_from_json(const nlohmann::json& error) {
  if (!error.is_object()) return make_error(ErrorCode::internal, "the worker sent a failed reply with no error record");
  auto code = parse_error_code(error.value("code", std::string("internal")));
  std::string message = error.value("message", std::string("(no message)"));
  if (!code || *code == ErrorCode::ok) return make_error(ErrorCode::internal, message);
  return make_error(*code, message);
}

}  // namespace tl
