// DrainAwareSocket reads like tcp::socket: whatever it skips (a recv after a read that left room
// in its buffer), no byte, end of stream or cancellation may be missed. Each test runs its loop
// for a bounded time, so a read that waits for an event that never comes fails instead of hanging.
#include "server/drain_aware_socket.h"

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace sluice::server {
namespace {

namespace net = boost::asio;
using net::ip::tcp;
using namespace std::chrono_literals;

struct ReadResult {
  boost::system::error_code ec;
  std::string bytes;
};

class DrainAwareSocketTest : public ::testing::Test {
 protected:
  DrainAwareSocketTest() : socket_(loop_) {
    tcp::acceptor acceptor(loop_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    LoopSocket accepted(loop_);
    acceptor.accept(accepted);
    socket_ = DrainAwareSocket(std::move(accepted));
  }

  // Starts one read of at most `room` bytes and runs the loop until it completes (at most 2 s).
  std::optional<ReadResult> readSome(std::size_t room) {
    startRead(room);
    return runUntilRead();
  }

  void startRead(std::size_t room) {
    result_.reset();
    buffer_.assign(room, '\0');
    socket_.async_read_some(net::buffer(buffer_),
                            [this](boost::system::error_code ec, std::size_t bytes) {
                              result_ = ReadResult{ec, buffer_.substr(0, bytes)};
                            });
  }

  std::optional<ReadResult> runUntilRead() {
    loop_.restart();
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (!result_ && std::chrono::steady_clock::now() < deadline) loop_.run_for(10ms);
    return result_;
  }

  void send(std::string_view bytes) { net::write(peer_, net::buffer(bytes)); }

  // One read of up to 64 bytes returns `bytes`.
  void expectRead(std::string_view bytes, std::string_view failure = {}) {
    const auto result = readSome(64);
    ASSERT_TRUE(result) << failure;
    EXPECT_EQ(result->bytes, bytes);
  }

  // A read (its `result`) completed, with `error`.
  static void expectEnded(const std::optional<ReadResult>& result, boost::system::error_code error,
                          std::string_view failure = {}) {
    ASSERT_TRUE(result) << failure;
    EXPECT_EQ(result->ec, error);
  }

  // Runs the reactor once with no read waiting, so the events raised so far are spent: what a
  // read does next cannot lean on them.
  void spendEvents() {
    net::steady_timer timer(loop_, 10ms);
    timer.async_wait([](boost::system::error_code) {});
    loop_.restart();
    loop_.run();
  }

  // The peer sends a few bytes and shuts its side; once their event is spent, one short read
  // takes the bytes, leaving the end of stream queued behind them with no event of its own.
  void readBytesQueuedBeforeTheEndOfStream() {
    send("last");
    peer_.shutdown(tcp::socket::shutdown_send);
    spendEvents();
    expectRead("last");
  }

  net::io_context loop_;
  tcp::socket peer_{loop_};
  DrainAwareSocket socket_;
  std::string buffer_;
  std::optional<ReadResult> result_;
};

// A read that fills its buffer may have left bytes behind: the next read takes them at once,
// with no new bytes arriving to raise an event.
TEST_F(DrainAwareSocketTest, AReadThatFillsItsBufferLeavesTheRestReadable) {
  send("0123456789abcdef");
  spendEvents();
  auto first = readSome(10);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->bytes, "0123456789");
  auto rest = readSome(64);
  ASSERT_TRUE(rest) << "the bytes left behind were never read";
  EXPECT_FALSE(rest->ec);
  EXPECT_EQ(rest->bytes, "abcdef");
}

// After a read that left room (the socket is drained), bytes that arrive later complete the
// next read.
TEST_F(DrainAwareSocketTest, BytesArrivingAfterAShortReadAreRead) {
  send("first");
  expectRead("first");
  startRead(64);
  loop_.restart();
  loop_.run_for(20ms);  // the read waits: nothing has arrived
  EXPECT_FALSE(result_);
  send("second");
  auto second = runUntilRead();
  ASSERT_TRUE(second) << "the bytes that came after a short read were never read";
  EXPECT_EQ(second->bytes, "second");
}

// A read started after a short read, with the next bytes already sent (their event pending in
// the reactor), still gets them: the event turns reading back on.
TEST_F(DrainAwareSocketTest, BytesSentBeforeTheNextReadStartsAreRead) {
  send("first");
  ASSERT_TRUE(readSome(64));
  send("second");
  expectRead("second");
}

// The peer closing after a short read ends the next read with end of stream.
TEST_F(DrainAwareSocketTest, EndOfStreamAfterAShortReadIsSeen) {
  send("last");
  ASSERT_TRUE(readSome(64));
  peer_.close();
  expectEnded(readSome(64), net::error::eof, "the peer's close was never seen");
}

// What the drained mark saves, and its one gap: after a short read the next read waits for the
// reactor instead of trying a recv, so an end of stream queued behind the bytes read (its event
// already spent) is not seen until the next event.
TEST_F(DrainAwareSocketTest, AfterAShortReadTheNextReadWaitsForAnEvent) {
  readBytesQueuedBeforeTheEndOfStream();
  startRead(64);
  loop_.restart();
  loop_.run_for(30ms);
  EXPECT_FALSE(result_) << "the read tried a recv after a short read";
  socket_.close();
  expectEnded(runUntilRead(), net::error::operation_aborted);
}

// With expectEndOfStream(), the same end of stream is seen at once.
TEST_F(DrainAwareSocketTest, ExpectingEndOfStreamSeesOneQueuedBehindTheBytesRead) {
  socket_.expectEndOfStream(true);
  readBytesQueuedBeforeTheEndOfStream();
  expectEnded(readSome(64), net::error::eof,
              "the end of stream behind the bytes read was not seen");
}

// A read into several buffers fills them in order; one that leaves room in the last is short.
TEST_F(DrainAwareSocketTest, ReadsIntoSeveralBuffers) {
  send("abcdefgh");
  std::array<char, 3> head{};
  std::array<char, 16> tail{};
  std::array<net::mutable_buffer, 2> buffers{net::buffer(head), net::buffer(tail)};
  std::optional<ReadResult> result;
  socket_.async_read_some(buffers, [&](boost::system::error_code ec, std::size_t bytes) {
    result = ReadResult{ec, std::string(head.data(), 3) + std::string(tail.data(), bytes - 3)};
  });
  loop_.run_for(1s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->bytes, "abcdefgh");
  send("more");
  expectRead("more");
}

// Closing the socket ends a waiting read with operation_aborted.
TEST_F(DrainAwareSocketTest, ClosingTheSocketAbortsAWaitingRead) {
  send("x");
  ASSERT_TRUE(readSome(64));
  startRead(64);
  loop_.restart();
  loop_.run_for(10ms);
  ASSERT_FALSE(result_);
  socket_.close();
  expectEnded(runUntilRead(), net::error::operation_aborted);
}

// A handler bound to a cancellation slot can be cancelled on its own, the socket left open.
TEST_F(DrainAwareSocketTest, PerOperationCancellationWorks) {
  net::cancellation_signal cancel;
  buffer_.assign(64, '\0');
  socket_.async_read_some(
      net::buffer(buffer_),
      net::bind_cancellation_slot(cancel.slot(), [this](boost::system::error_code ec, std::size_t) {
        result_ = ReadResult{ec, {}};
      }));
  loop_.run_for(10ms);
  ASSERT_FALSE(result_);
  cancel.emit(net::cancellation_type::all);
  expectEnded(runUntilRead(), net::error::operation_aborted);
  EXPECT_TRUE(socket_.is_open());
}

// Asio's composed reads work over it (the gateway reads through Beast's parsers the same way).
TEST_F(DrainAwareSocketTest, ComposedReadsGetEveryByte) {
  std::string sent;
  for (int i = 0; i < 5000; ++i) sent += static_cast<char>('a' + i % 26);
  std::string received(sent.size(), '\0');
  std::optional<boost::system::error_code> done;
  net::async_read(socket_, net::buffer(received),
                  [&](boost::system::error_code ec, std::size_t) { done = ec; });
  for (std::size_t at = 0; at < sent.size(); at += 700) {
    send(std::string_view(sent).substr(at, 700));
    loop_.restart();
    loop_.run_for(5ms);
  }
  loop_.restart();
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!done && std::chrono::steady_clock::now() < deadline) loop_.run_for(10ms);
  ASSERT_TRUE(done);
  EXPECT_FALSE(*done);
  EXPECT_EQ(received, sent);
}

}  // namespace
}  // namespace sluice::server
