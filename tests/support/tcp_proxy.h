// Test helper: a TCP proxy on 127.0.0.1 in front of a server on another loopback port, running
// on its own thread. It forwards both ways, and can black-hole the connections open at some
// moment: they stay open, and whatever either side sends on them is read and dropped, as on a
// path that went silent with no FIN or RST (a moved pod, a VIP failover, a proxy whose backend
// died). Connections made afterwards are forwarded as before. It can also hold what it passes
// on, as a server far away would be. Header-only (Boost.Asio).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace sluice::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int target_port)
      : target_(boost::asio::ip::make_address("127.0.0.1"),
                static_cast<std::uint16_t>(target_port)),
        acceptor_(io_, Endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)),
        port_(acceptor_.local_endpoint().port()) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~TcpProxy() {
    (void)onThread([this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      for (const auto& link : links_) link->close();
    });
    work_.reset();
    io_.stop();
    thread_.join();
  }

  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  // Client connections accepted so far. Thread-safe.
  [[nodiscard]] std::size_t accepted() const noexcept { return accepted_.load(); }

  // On connections made from now on, each read either way is passed on `delay` later: a server
  // a round trip of twice that away. Call before the client connects.
  void delayEach(std::chrono::milliseconds delay) { delay_ms_ = delay.count(); }

  // The connections open now go silent both ways, and stay open.
  void blackHole() {
    const bool done = onThread([this] {
      for (const auto& link : links_) link->black_holed = true;
    });
    if (!done) throw std::runtime_error("the proxy's thread did not run");
  }

 private:
  using Endpoint = boost::asio::ip::tcp::endpoint;
  using Socket = boost::asio::ip::tcp::socket;
  using Buffer = std::array<char, 16 * 1024>;

  // A client's connection and the proxy's connection to the server for it.
  struct Link {
    explicit Link(boost::asio::io_context& io) : client(io), server(io) {}
    Socket client;
    Socket server;
    bool black_holed = false;
    std::chrono::milliseconds delay{0};
    void close() {
      boost::system::error_code ignored;
      client.close(ignored);
      server.close(ignored);
    }
  };

  // Runs `work` on the proxy's thread and waits for it, ten seconds at most: false if it did
  // not run by then.
  template <typename Work>
  [[nodiscard]] bool onThread(Work work) {
    auto done = std::make_shared<std::promise<void>>();
    boost::asio::post(io_, [work, done] {
      work();
      done->set_value();
    });
    return done->get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code error, Socket client) {
      if (error) return;  // closed
      ++accepted_;
      auto link = std::make_shared<Link>(io_);
      link->client = std::move(client);
      link->delay = std::chrono::milliseconds(delay_ms_.load());
      links_.push_back(link);
      link->server.async_connect(target_, [link](boost::system::error_code failed) {
        if (failed) return link->close();
        pump(link, link->client, link->server, std::make_shared<Buffer>());
        pump(link, link->server, link->client, std::make_shared<Buffer>());
      });
      accept();
    });
  }

  // Copies what `from` reads to `to` until either side fails; on a black-holed link, drops it.
  static void pump(const std::shared_ptr<Link>& link, Socket& from, Socket& to,
                   const std::shared_ptr<Buffer>& buffer) {
    from.async_read_some(
        boost::asio::buffer(*buffer),
        [link, &from, &to, buffer](boost::system::error_code error, std::size_t size) {
          if (error) return link->close();
          if (link->black_holed) return pump(link, from, to, buffer);
          if (link->delay.count() == 0) return forward(link, from, to, buffer, size);
          auto timer = std::make_shared<boost::asio::steady_timer>(to.get_executor(), link->delay);
          timer->async_wait([link, &from, &to, buffer, size, timer](boost::system::error_code) {
            forward(link, from, to, buffer, size);
          });
        });
  }

  // Writes the `size` bytes `from` read to `to`, then reads on.
  static void forward(const std::shared_ptr<Link>& link, Socket& from, Socket& to,
                      const std::shared_ptr<Buffer>& buffer, std::size_t size) {
    boost::asio::async_write(
        to, boost::asio::buffer(buffer->data(), size),
        [link, &from, &to, buffer](boost::system::error_code failed, std::size_t) {
          if (failed) return link->close();
          pump(link, from, to, buffer);
        });
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  Endpoint target_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_;
  std::vector<std::shared_ptr<Link>> links_;  // on the proxy's thread
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::int64_t> delay_ms_{0};
  std::thread thread_;
};

}  // namespace sluice::testing
