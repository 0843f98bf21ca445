// The pool of parked upstream connections: what is reused, and what an idle timeout closes.
#include "gateway/upstream_pool.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace sluice::gateway {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// An "upstream" listening on loopback, and connections to it whose far ends the test holds, to
// see when the pool closes the near ones.
class UpstreamPoolTest : public ::testing::Test {
 protected:
  // A connected client socket for the pool; its accepted far end goes to far_ends_.
  UpstreamConnection connect() {
    auto near = std::make_unique<server::DrainAwareSocket>(loop_);
    near->connect(listener_.local_endpoint());
    far_ends_.push_back(std::make_unique<tcp::socket>(listener_.accept()));
    return near;
  }

  std::vector<Upstream> upstreams(std::vector<Micros> idle_timeouts_us) {
    std::vector<Upstream> list;
    for (const Micros timeout : idle_timeouts_us) {
      Upstream upstream;
      upstream.endpoint = listener_.local_endpoint();
      upstream.idle_timeout_us = timeout;
      list.push_back(upstream);
    }
    return list;
  }

  // Runs the loop until the far end of connection `index` reads an end of stream or a reset (the
  // pool closed the near end), for at most 10 s. True when it did.
  bool farEndCloses(std::size_t index) {
    bool closed = false;
    char byte = 0;
    far_ends_[index]->async_read_some(
        net::buffer(&byte, 1), [&](const boost::system::error_code& ec, std::size_t) {
          // A reset when the near end closed with bytes unread (the far end sent some).
          closed = ec == net::error::eof || ec == net::error::connection_reset;
          finished_ = true;
        });
    finished_ = false;
    runLoopUntil(finished_);
    return closed;
  }

  // Runs the loop until `done` is set, for at most 10 s.
  void runLoopUntil(const bool& done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done && std::chrono::steady_clock::now() < give_up) {
      loop_.run_for(std::chrono::milliseconds(20));
      loop_.restart();
    }
  }

  // Reads `size` bytes from `socket` (on loop_), running the loop for at most 10 s: what came
  // by then, so that a missing byte fails the test instead of hanging it.
  template <typename Socket>
  std::string readBytes(Socket& socket, std::size_t size) {
    std::string bytes(size, '\0');
    std::size_t got = 0;
    bool done = false;
    net::async_read(socket, net::buffer(bytes),
                    [&](const boost::system::error_code&, std::size_t transferred) {
                      got = transferred;
                      done = true;
                    });
    runLoopUntil(done);
    if (!done) socket.cancel();
    loop_.poll();  // the cancelled read's handler, before `got` and `done` go away
    loop_.restart();
    bytes.resize(got);
    return bytes;
  }

  ParkedClosedCount parked_closed_ = std::make_shared<std::atomic<std::uint64_t>>(0);
  net::io_context loop_;
  tcp::acceptor listener_{loop_, tcp::endpoint(net::ip::address_v4::loopback(), 0)};
  std::vector<std::unique_ptr<tcp::socket>> far_ends_;
  bool finished_ = false;
};

TEST_F(UpstreamPoolTest, AConnectionParkedWithinItsIdleTimeoutIsReused) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond}), parked_closed_);
  UpstreamConnection connection = connect();
  server::DrainAwareSocket* const parked = connection.get();
  pool.giveBack(0, std::move(connection));
  EXPECT_EQ(pool.idleCount(0), 1U);
  UpstreamConnection taken = pool.takeIdle(0, /*verify=*/true);
  EXPECT_EQ(taken.get(), parked);
  EXPECT_EQ(pool.idleCount(0), 0U);
}

// The timer closes it with nothing else happening: an idle gateway lets its upstream connections
// go, as nginx's upstream keepalive_timeout does.
TEST_F(UpstreamPoolTest, AConnectionParkedForItsIdleTimeoutIsClosed) {
  UpstreamPool pool(loop_, upstreams({50 * kMicrosPerMilli}), parked_closed_);
  pool.giveBack(0, connect());
  EXPECT_TRUE(farEndCloses(0));
  EXPECT_EQ(pool.idleCount(0), 0U);
  EXPECT_EQ(parked_closed_->load(), 0U);  // expected closes are not the upstream's doing
}

// Past its timeout a connection is not handed out even when the timer has not run yet (a busy
// loop runs it late).
TEST_F(UpstreamPoolTest, AConnectionPastItsIdleTimeoutIsNotHandedOut) {
  UpstreamPool pool(loop_, upstreams({kMicrosPerMilli}), parked_closed_);
  pool.giveBack(0, connect());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(pool.takeIdle(0, /*verify=*/false), nullptr);
  EXPECT_TRUE(farEndCloses(0));
}

// One timer serves every upstream: one with a shorter timeout parked after one with a longer
// must not wait for the longer.
TEST_F(UpstreamPoolTest, EachUpstreamKeepsItsOwnIdleTimeout) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond, 50 * kMicrosPerMilli}),
                    parked_closed_);
  pool.giveBack(0, connect());
  pool.giveBack(1, connect());
  EXPECT_TRUE(farEndCloses(1));
  EXPECT_EQ(pool.idleCount(1), 0U);
  EXPECT_EQ(pool.idleCount(0), 1U);
  EXPECT_NE(pool.takeIdle(0, /*verify=*/true), nullptr);
}

// A connection parked later than the oldest keeps its own time: the timer closes the oldest and
// is set again for the next.
TEST_F(UpstreamPoolTest, TheTimerMovesOnToTheNextOldest) {
  UpstreamPool pool(loop_, upstreams({100 * kMicrosPerMilli}), parked_closed_);
  pool.giveBack(0, connect());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // so the timer meets one at a time
  pool.giveBack(0, connect());
  EXPECT_TRUE(farEndCloses(0));
  EXPECT_TRUE(farEndCloses(1));
  EXPECT_EQ(pool.idleCount(0), 0U);
}

// Runs the loop for a moment, so that it collects what arrived on the parked connections' sockets.
void collectEvents(net::io_context& loop) {
  loop.run_for(std::chrono::milliseconds(50));
  loop.restart();
}

// Bytes the upstream sends on a parked connection (a body past its Content-Length, say) end the
// watch's read: the connection is closed, not handed out, with no peek asked for (verify false).
TEST_F(UpstreamPoolTest, BytesOnAParkedConnectionCloseIt) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond}), parked_closed_);
  pool.giveBack(0, connect());
  net::write(*far_ends_[0], net::buffer("late", 4));
  collectEvents(loop_);
  EXPECT_EQ(pool.takeIdle(0, /*verify=*/false), nullptr);
  EXPECT_EQ(parked_closed_->load(), 1U);
  EXPECT_TRUE(farEndCloses(0));
}

// So does the upstream closing it (its own idle timeout, a restart).
TEST_F(UpstreamPoolTest, AParkedConnectionTheUpstreamClosedIsNotHandedOut) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond}), parked_closed_);
  pool.giveBack(0, connect());
  pool.giveBack(0, connect());
  far_ends_[1]->close();  // the newer one, which a take tries first
  collectEvents(loop_);
  UpstreamConnection taken = pool.takeIdle(0, /*verify=*/false);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(parked_closed_->load(), 1U);
  EXPECT_EQ(pool.idleCount(0), 0U);
  // The one handed out is the older, still open, connection: its far end hears what it writes.
  net::write(*taken, net::buffer("ping", 4));
  EXPECT_EQ(readBytes(*far_ends_[0], 4), "ping");
}

// An upstream that closes its side right behind its answer (a lingering close) sends no event
// after the one the answer came with, so only a recv sees that end of stream: the pool peeks as
// it parks the connection. A connection reused without that sent its next request to an upstream
// that would never answer it, and the client waited for response_timeout.
TEST_F(UpstreamPoolTest, AnEndOfStreamRightBehindTheAnswerIsSeen) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond}), parked_closed_);
  UpstreamConnection connection = connect();
  // The answer's read waits in the reactor, with room to spare, as the gateway's does; the
  // answer and the end of stream behind it come before the loop looks, so with one event.
  char answer[64] = {};
  std::size_t got = 0;
  bool read = false;
  connection->async_read_some(net::buffer(answer),
                              [&](const boost::system::error_code&, std::size_t transferred) {
                                got = transferred;
                                read = true;
                              });
  net::write(*far_ends_[0], net::buffer("answer", 6));
  far_ends_[0]->shutdown(tcp::socket::shutdown_send);
  runLoopUntil(read);
  ASSERT_EQ(std::string(answer, got), "answer");
  pool.giveBack(0, std::move(connection));
  // Taken at once, as another client's request on the same loop may take it: no handler of
  // the pool's may be needed to have run first.
  EXPECT_EQ(pool.takeIdle(0, /*verify=*/false), nullptr);
  EXPECT_EQ(parked_closed_->load(), 1U);
}

// A connection taken from the pool reads the upstream's next answer whole: its watch was called
// off, and took no byte of it.
TEST_F(UpstreamPoolTest, ATakenConnectionsWatchTakesNoByteOfTheAnswer) {
  UpstreamPool pool(loop_, upstreams({60 * kMicrosPerSecond}), parked_closed_);
  pool.giveBack(0, connect());
  collectEvents(loop_);
  UpstreamConnection taken = pool.takeIdle(0, /*verify=*/false);
  ASSERT_NE(taken, nullptr);
  collectEvents(loop_);  // the called-off watch's handler runs
  net::write(*far_ends_[0], net::buffer("answer", 6));
  collectEvents(loop_);
  EXPECT_EQ(readBytes(*taken, 6), "answer");
  EXPECT_EQ(parked_closed_->load(), 0U);
}

}  // namespace
}  // namespace sluice::gateway
