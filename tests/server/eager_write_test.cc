// eagerWrite delivers every byte, in order, exactly as async_write would: at once (its handler
// run inside the call) when the socket takes them all, through the loop when it takes part of
// them or none, and with the error when the socket is gone. The peer reads on its own thread
// with a receive timeout, so a write that never finishes fails the test instead of hanging it.
#include "server/eager_write.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sluice::server {
namespace {

namespace net = boost::asio;
using net::ip::tcp;
using namespace std::chrono_literals;

struct WriteResult {
  boost::system::error_code ec;
  std::size_t bytes = 0;
};

class EagerWriteTest : public ::testing::Test {
 protected:
  EagerWriteTest() {
    tcp::acceptor acceptor(loop_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    acceptor.accept(socket_);
    const timeval two_seconds{2, 0};
    setsockopt(peer_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &two_seconds, sizeof two_seconds);
  }

  // A small send buffer, so that a megabyte cannot go out at once while the peer is not reading.
  // (The peer's receive buffer stays as it is: shrinking it too makes loopback TCP crawl.)
  void shrinkBuffers() { socket_.set_option(net::socket_base::send_buffer_size(4096)); }

  // The peer reads `size` bytes on its own thread while the loop runs until the write's handler
  // has been called (at most 5 s); returns what the peer read.
  std::string runWhilePeerReads(std::size_t size) {
    std::string received(size, '\0');
    std::thread reader([&] {
      // Plain recv: its receive timeout (set above) ends a read that finds nothing for 2 s.
      std::size_t got = 0;
      while (got < size) {
        const ssize_t n = ::recv(peer_.native_handle(), received.data() + got, size - got, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      received.resize(got);
    });
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!result_ && std::chrono::steady_clock::now() < deadline) {
      loop_.restart();
      loop_.run_for(10ms);
    }
    reader.join();
    return received;
  }

  template <typename Buffers>
  void write(const Buffers& buffers) {
    eagerWrite(socket_, buffers, [this](boost::system::error_code ec, std::size_t bytes) {
      EXPECT_FALSE(result_) << "the handler ran twice";
      result_ = WriteResult{ec, bytes};
    });
  }

  static std::string pattern(std::size_t size) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i)
      bytes[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return bytes;
  }

  net::io_context loop_;
  tcp::socket peer_{loop_};
  tcp::socket socket_{loop_};
  std::optional<WriteResult> result_;
};

// What the socket takes at once is written inside the call, the handler run before it returns.
TEST_F(EagerWriteTest, ASmallWriteCompletesInsideTheCall) {
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  write(net::buffer(answer));
  ASSERT_TRUE(result_) << "the handler waited for the loop";
  EXPECT_FALSE(result_->ec);
  EXPECT_EQ(result_->bytes, answer.size());
  EXPECT_EQ(runWhilePeerReads(answer.size()), answer);
}

// More than the socket takes at once: the rest goes out through the loop as the peer reads,
// every byte in order, and the handler counts them all.
TEST_F(EagerWriteTest, AWriteLargerThanTheSocketTakesFinishesThroughTheLoop) {
  shrinkBuffers();
  const std::string body = pattern(1 << 20);
  write(net::buffer(body));
  EXPECT_FALSE(result_) << "a megabyte went out at once through 4 KiB buffers";
  EXPECT_EQ(runWhilePeerReads(body.size()), body);
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ec);
  EXPECT_EQ(result_->bytes, body.size());
}

// A socket whose buffer is already full takes nothing at once: the whole write waits for room.
TEST_F(EagerWriteTest, ASocketThatTakesNothingNowGetsEverythingLater) {
  shrinkBuffers();
  std::string filler;
  const std::string block(1024, 'f');
  for (;;) {
    const ssize_t sent = ::send(socket_.native_handle(), block.data(), block.size(), MSG_DONTWAIT);
    if (sent <= 0) break;
    filler.append(block, 0, static_cast<std::size_t>(sent));
  }
  const std::string body = pattern(200'000);
  write(net::buffer(body));
  EXPECT_FALSE(result_);
  EXPECT_EQ(runWhilePeerReads(filler.size() + body.size()), filler + body);
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ec);
  EXPECT_EQ(result_->bytes, body.size());
}

// A sequence of more pieces than one send takes (16): the first go at once, the rest after,
// joined in order.
TEST_F(EagerWriteTest, ASequenceOfManyPiecesArrivesWhole) {
  std::vector<std::string> pieces;
  std::vector<net::const_buffer> buffers;
  std::string whole;
  for (int i = 0; i < 40; ++i) pieces.push_back("piece-" + std::to_string(i) + ";");
  for (const std::string& piece : pieces) {
    buffers.push_back(net::buffer(piece));
    whole += piece;
  }
  write(buffers);
  EXPECT_EQ(runWhilePeerReads(whole.size()), whole);
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ec);
  EXPECT_EQ(result_->bytes, whole.size());
}

// A closed socket: the handler gets the error, through the loop as async_write reports it.
TEST_F(EagerWriteTest, AClosedSocketReportsTheError) {
  socket_.close();
  const std::string answer = "late";
  write(net::buffer(answer));
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!result_ && std::chrono::steady_clock::now() < deadline) {
    loop_.restart();
    loop_.run_for(10ms);
  }
  ASSERT_TRUE(result_);
  EXPECT_TRUE(result_->ec);
}

// A peer that reset the connection: the handler gets the reset, as async_write reports it, not
// the broken pipe a second send would see, and through the loop.
TEST_F(EagerWriteTest, APeersResetIsTheErrorReported) {
  peer_.set_option(net::socket_base::linger(true, 0));
  peer_.close();                      // with linger 0: a reset
  std::this_thread::sleep_for(20ms);  // for the reset to reach this end of the loopback
  const std::string answer = "too late";
  write(net::buffer(answer));
  EXPECT_FALSE(result_) << "an error ran its handler inside the call";
  loop_.restart();
  loop_.run_for(100ms);
  ASSERT_TRUE(result_);
  EXPECT_EQ(result_->ec, net::error::connection_reset) << result_->ec.message();
}

// An empty write has nothing to wait for.
TEST_F(EagerWriteTest, AnEmptyWriteCompletesAtOnce) {
  write(net::buffer(std::string_view()));
  ASSERT_TRUE(result_);
  EXPECT_FALSE(result_->ec);
  EXPECT_EQ(result_->bytes, 0u);
}

}  // namespace
}  // namespace sluice::server
