// Worker protocol framing: round trips, incremental decoding, and refusal of malformed frames.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <thread>

#include "runtime/worker/protocol.hpp"

namespace tl {
namespace {

Message sample_message() {
  Message m = make_request("launch", {{"label", "x"}, {"n", 3}});
  m.header["id"] = 42;
  m.add_blob({});
  m.add_blob({7});
  Blob big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 31 + 7);
  m.header["big"] = m.add_blob(big);
  return m;
}

TEST(Protocol, RoundTripWithBlobs) {
  Message m = sample_message();
  Blob frame = encode_frame(m);
  ASSERT_EQ(0, std::memcmp(frame.data(), "TLWK", 4));
  FrameDecoder d;
  d.feed(frame.data(), frame.size());
  auto got = d.next();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  const Message& r = **got;
  EXPECT_EQ(r.header, m.header);
  EXPECT_EQ(r.blobs, m.blobs);
  EXPECT_EQ(r.type(), "request");
  EXPECT_EQ(r.id(), 42u);
  auto big = r.blob_at("big");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ((*big)->size(), 100000u);
  EXPECT_FALSE(r.blob_at("label").ok());
  EXPECT_EQ(d.pending(), 0u);
}

TEST(Protocol, ByteByByteAndBackToBack) {
  Message a = sample_message(), b = make_progress(42, {{"index", 1}});
  Blob stream = encode_frame(a);
  Blob second = encode_frame(b);
  stream.insert(stream.end(), second.begin(), second.end());
  FrameDecoder d;
  std::vector<Message> got;
  for (std::uint8_t byte : stream) {
    d.feed(&byte, 1);
    for (;;) {
      auto n = d.next();
      ASSERT_TRUE(n.ok()) << n.status().message();
      if (!n->has_value()) break;
      got.push_back(std::move(**n));
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].blobs, a.blobs);
  EXPECT_EQ(got[1].type(), "progress");
  EXPECT_EQ(got[1].header["index"], 1);
}

TEST(Protocol, TruncatedFrameWaitsAndReportsPending) {
  Blob frame = encode_frame(sample_message());
  FrameDecoder d;
  d.feed(frame.data(), frame.size() - 1);
  auto n = d.next();
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
  EXPECT_EQ(d.pending(), frame.size() - 1);
}

Status decode_error(const Blob& bytes) {
  FrameDecoder d;
  d.feed(bytes.data(), bytes.size());
  auto n = d.next();
  if (n.ok()) return make_error(ErrorCode::ok, n->has_value() ? "decoded" : "waiting");
  return n.status();
}

TEST(Protocol, GarbageIsRefused) {
  // A wrong first byte is refused at once, without waiting for a full header.
  Status s = decode_error({'X'});
  EXPECT_EQ(s.code(), ErrorCode::parse);
  s = decode_error({'t', 'h', 'i', 's', ' ', 'i', 's', ' ', 'n', 'o', 't', ' ', 'a', ' ', 'f', 'r', 'a', 'm', 'e'});
  EXPECT_EQ(s.code(), ErrorCode::parse);
  EXPECT_NE(s.message().find("bad magic"), std::string::npos);

  Blob huge = {'T', 'L', 'W', 'K', 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  s = decode_error(huge);
  EXPECT_NE(s.message().find("exceeds the limit"), std::string::npos) << s.message();

  Blob many = {'T', 'L', 'W', 'K', 2, 0, 0, 0, 0xFF, 0xFF, 0, 0};
  EXPECT_EQ(decode_error(many).code(), ErrorCode::parse);

  auto with_header = [](const std::string& h) {
    Blob b(12 + h.size(), 0);
    std::memcpy(b.data(), "TLWK", 4);
    b[4] = static_cast<std::uint8_t>(h.size());
    std::memcpy(b.data() + 12, h.data(), h.size());
    return b;
  };
  EXPECT_NE(decode_error(with_header("{not json")).message().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(decode_error(with_header("[1,2]")).code(), ErrorCode::parse);
  EXPECT_EQ(decode_error(with_header("{\"type\":3}")).code(), ErrorCode::parse);
  EXPECT_EQ(decode_error(with_header("{\"type\":\"reply\"}")).code(), ErrorCode::ok);

  // After a malformed frame the stream cannot be trusted: the decoder stays in error.
  FrameDecoder d;
  Blob bad = {'Z', 'Z', 'Z', 'Z'};
  d.feed(bad.data(), bad.size());
  EXPECT_FALSE(d.next().ok());
  Blob good = encode_frame(make_reply(1));
  d.feed(good.data(), good.size());
  EXPECT_FALSE(d.next().ok());
}

TEST(Protocol, FramesOverAPipe) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Message m = sample_message();
  // The frame is larger than a pipe's buffer: write from another thread while this one reads.
  std::thread writer([&] {
    EXPECT_TRUE(write_frame(fds[1], m).ok());
    EXPECT_TRUE(write_frame(fds[1], make_reply(42, {{"done", true}})).ok());
    close(fds[1]);
  });
  FrameDecoder d;
  auto a = read_frame(fds[0], d);
  auto b = read_frame(fds[0], d);
  auto c = read_frame(fds[0], d);
  writer.join();
  close(fds[0]);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->blobs, m.blobs);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->header["ok"].get<bool>());
  EXPECT_EQ(b->header["done"], true);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::not_found);  // clean end of stream
}

TEST(Protocol, ErrorRecordsRoundTrip) {
  Message m = make_error_reply(5, make_error(ErrorCode::fault, "illegal address"), true);
  Status s = status_from_json(m.header["error"]);
  EXPECT_EQ(s.code(), ErrorCode::fault);
  EXPECT_EQ(s.message(), "illegal address");
  EXPECT_TRUE(m.header["fatal"].get<bool>());
  EXPECT_FALSE(m.header["ok"].get<bool>());
  EXPECT_EQ(status_from_json(nlohmann::json{{"code", "nonsense"}}).code(), ErrorCode::internal);
  EXPECT_EQ(status_from_json(nlohmann::json{{"code", "ok"}}).code(), ErrorCode::internal);
}

}  // namespace
}  // namespace tl
