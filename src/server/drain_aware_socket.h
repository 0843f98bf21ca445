// A TCP socket whose reads remember when they emptied the socket, so the next read waits for
// the reactor instead of first trying a recv that is bound to find nothing.
//
// Why: Asio's epoll reactor (edge-triggered) tries every new read at once, "speculatively",
// unless an earlier read on the descriptor reported the socket exhausted since its last event.
// Its own reads report that only at end of stream. So on a keep-alive connection each request
// costs a recv that returns EAGAIN before the one that returns data: when the gateway starts
// reading the upstream's answer right after sending the request, and when a server starts
// reading a client's next request right after answering this one. On this project's VMs a
// system call costs more than a microsecond. nginx avoids the same recv by treating a read that
// left room in its buffer as having drained the socket, and so does this one.
//
// Why no byte is missed: the read that left room held the descriptor's lock in the reactor
// while it ran, and any byte (or end of stream, or error) that arrives after it raises a new
// epoll event, which turns speculative reads back on before a waiting read is tried.
//
// What it costs: an end of stream that was already queued behind the bytes that read returned
// (the kernel stops a read at it) raises no new event: the next read sees it only at the
// descriptor's next event or when the connection's deadline closes it. (nginx avoids that gap
// by registering for EPOLLRDHUP; Asio registers without it.) So:
//  - a read that needs that end of stream promptly, a body that ends when the peer closes,
//    sets expectEndOfStream(): its reads try a recv first, as tcp::socket's do;
//  - what HTTP otherwise waits for (the next request, the upstream's answer) raises its own
//    event. A client that sends its request and closes at once is noticed when the answer is
//    written (a reset comes back) or at its deadline, not before; an upstream that closes a
//    kept-alive connection right after answering, without saying so, is noticed by the peek the
//    gateway's pool makes as it parks the connection (upstream_pool.h).
//
// This reaches into Asio's reactor (boost::asio::detail), as Asio's own socket services do;
// the static_assert and #error below tie it to the Asio this project builds with (Boost 1.81,
// Debian 12) and to the epoll reactor.
#pragma once

#include <cstddef>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/buffer_sequence_adapter.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/version.hpp>

#include "server/loop_io.h"

static_assert(BOOST_ASIO_VERSION == 102600,
              "DrainAwareSocket follows Asio 1.26's reactor (Boost 1.81): check "
              "epoll_reactor::start_op and perform_io before building with another Asio");
#if !defined(BOOST_ASIO_HAS_EPOLL) || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#error "DrainAwareSocket relies on Asio's epoll reactor"
#endif

namespace sluice::server {

namespace drain_aware_detail {

namespace asio_detail = boost::asio::detail;

// One receive on the reactor. Its only difference from Asio's own receive operation is the
// status it reports: a read that left room in the buffers is "done and exhausted".
template <typename Buffers, typename Handler, typename IoExecutor>
class ReadOp : public asio_detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(ReadOp);

  ReadOp(asio_detail::socket_type socket, const Buffers& buffers, Handler& handler,
         const IoExecutor& io_executor)
      : reactor_op(boost::system::error_code(), &ReadOp::performRead, &ReadOp::completeRead),
        socket_(socket),
        buffers_(buffers),
        handler_(std::move(handler)),
        work_(handler_, io_executor) {}

  static status performRead(reactor_op* base) {
    auto* op = static_cast<ReadOp*>(base);
    using Adapter = asio_detail::buffer_sequence_adapter<boost::asio::mutable_buffer, Buffers>;
    namespace socket_ops = asio_detail::socket_ops;
    std::size_t room = 0;
    bool finished = false;
    if constexpr (Adapter::is_single_buffer) {
      const boost::asio::mutable_buffer buffer = Adapter::first(op->buffers_);
      room = buffer.size();
      finished =
          socket_ops::non_blocking_recv1(op->socket_, buffer.data(), room, 0,
                                         /*is_stream=*/true, op->ec_, op->bytes_transferred_);
    } else {
      Adapter buffers(op->buffers_);
      room = buffers.total_size();
      finished = socket_ops::non_blocking_recv(op->socket_, buffers.buffers(), buffers.count(), 0,
                                               /*is_stream=*/true, op->ec_, op->bytes_transferred_);
    }
    if (!finished) return not_done;  // nothing there yet: wait for the next event
    // An error or end of stream ends reading anyway; a short read emptied the socket.
    const bool drained = op->ec_ || op->bytes_transferred_ < room;
    return drained ? done_and_exhausted : done;
  }

  // Asio's completion protocol, as in its own receive operation: free the operation before
  // the upcall (the handler may own the memory), and make the upcall only when `owner` says
  // the loop is running rather than being destroyed.
  static void completeRead(void* owner, asio_detail::operation* base,
                           const boost::system::error_code& /*unused*/, std::size_t /*unused*/) {
    auto* op = static_cast<ReadOp*>(base);
    ptr p = {asio_detail::addressof(op->handler_), op, op};
    asio_detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));
    asio_detail::binder2<Handler, boost::system::error_code, std::size_t> bound(
        op->handler_, op->ec_, op->bytes_transferred_);
    p.h = asio_detail::addressof(bound.handler_);
    p.reset();
    if (owner != nullptr) {
      asio_detail::fenced_block fence(asio_detail::fenced_block::half);
      work.complete(bound, bound.handler_);
    }
  }

 private:
  asio_detail::socket_type socket_;
  Buffers buffers_;
  Handler handler_;
  asio_detail::handler_work<Handler, IoExecutor> work_;
};

}  // namespace drain_aware_detail

class DrainAwareSocket : public LoopSocket {
 public:
  explicit DrainAwareSocket(boost::asio::io_context& loop)
      : LoopSocket(loop), reactor_(&reactorOf(get_executor())) {}
  explicit DrainAwareSocket(LoopSocket&& accepted)
      : LoopSocket(std::move(accepted)), reactor_(&reactorOf(get_executor())) {}

  // While set, each read first tries a recv (as tcp::socket's do), so an end of stream that came
  // with the bytes last read is seen at once: for a message that ends when the peer closes.
  void expectEndOfStream(bool expected) noexcept { end_of_stream_expected_ = expected; }

  // As tcp::socket::async_read_some, for one read at a time. A handler with a cancellation slot
  // takes Asio's own path, which supports per-operation cancellation; closing the socket
  // cancels either.
  template <typename MutableBuffers, typename ReadToken>
  auto async_read_some(const MutableBuffers& buffers, ReadToken&& token) {
    return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& into) { startRead(into, handler); }, token,
        buffers);
  }

 private:
  static boost::asio::detail::reactor& reactorOf(const executor_type& executor) {
    return boost::asio::use_service<boost::asio::detail::reactor>(executor.context());
  }

  template <typename MutableBuffers, typename Handler>
  void startRead(const MutableBuffers& buffers, Handler& handler) {
    namespace asio_detail = boost::asio::detail;
    using Adapter =
        asio_detail::buffer_sequence_adapter<boost::asio::mutable_buffer, MutableBuffers>;
    if (boost::asio::get_associated_cancellation_slot(handler).is_connected() ||
        Adapter::all_empty(buffers)) {
      // Asio's own read: per-operation cancellation, and a zero-byte read completing at once.
      LoopSocket::async_read_some(buffers, std::move(handler));
      return;
    }
    using Op = drain_aware_detail::ReadOp<MutableBuffers, Handler, executor_type>;
    auto& impl = impl_.get_implementation();
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    typename Op::ptr p = {asio_detail::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(impl.socket_, buffers, handler, impl_.get_executor());
    // The reactor needs the descriptor in non-blocking mode, as Asio's own start_op ensures.
    if ((impl.state_ & asio_detail::socket_ops::non_blocking) == 0 &&
        !asio_detail::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true,
                                                            p.p->ec_)) {
      reactor_->post_immediate_completion(p.p, is_continuation);
    } else if (end_of_stream_expected_ && p.p->perform() != Op::not_done) {
      // Done without the reactor (no read of this socket is waiting in it, so none races).
      reactor_->post_immediate_completion(p.p, is_continuation);
    } else {
      reactor_->start_op(asio_detail::reactor::read_op, impl.socket_, impl.reactor_data_, p.p,
                         is_continuation, /*allow_speculative=*/true);
    }
    p.v = p.p = nullptr;
  }

  boost::asio::detail::reactor* reactor_;
  bool end_of_stream_expected_ = false;
};

}  // namespace sluice::server
