// One client connection to the gateway. It reads a request header with Beast's parser, runs the
// guard, decides the request, and forwards it: the body is streamed to the upstream in chunks as
// it arrives, and the response streamed back, so bodies of any size pass through a fixed buffer.
// A connection lives on one loop; a throttled request waits on a timer there, no thread blocked.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "gateway/chunk_buffer.h"
#include "gateway/concurrency_limiter.h"
#include "gateway/ddos_guard.h"
#include "gateway/dynamic_limits.h"
#include "gateway/field_arena.h"
#include "gateway/forwarding.h"
#include "gateway/gateway_state.h"
#include "policy/decide.h"
#include "server/body_reads.h"
#include "server/body_room.h"
#include "server/bounded_parser.h"
#include "server/connection_deadline.h"
#include "server/drain_aware_socket.h"

namespace sluice::gateway {

class ProxySession : public std::enable_shared_from_this<ProxySession> {
 public:
  ProxySession(server::LoopSocket&& socket, boost::asio::io_context& loop,
               std::shared_ptr<Gateway::State> state, DdosGuard::ConnectionTicket ticket);
  ~ProxySession();

  void start();
  // On shutdown: closes the connection now if it is waiting for a request, or is a WebSocket
  // tunnel (which has no end of its own).
  void closeIfIdle();

 private:
  struct Exchange;  // one request and its response

  // Client side: read the request (proxy_session.cc), then guard, route, decide
  // (proxy_admission.cc).
  void readHeader();
  void onHeader(boost::beast::error_code ec);
  void admit();
  [[nodiscard]] bool refusedBeforeRouting();
  void decidePass();
  void countInMetrics();  // of the decision just made
  void onDecision(policy::PolicyDecision&& decision);
  // A throttle limit holds the request (proxy_throttle.cc): it waits in line for its limit and
  // key (server/throttle_lines.h), the first for the unit the store says frees, the others for
  // their turn or their max_delay, whichever comes first, and then decides again.
  void waitToDecideAgain();
  // Requests are held on one of its throttle limits and keys (PolicyDecision::queue_behind): it
  // joins their line undecided, first come first served.
  void queueBehind();
  void countThrottledOnce();  // the gateway's throttled counter, once per request
  // A place in the line of `check`'s limit and key, unless it holds one there; true when first.
  bool takePlaceInLine(const policy::PlannedCheck& check);
  [[nodiscard]] policy::HeldOn heldOn() const;  // what the policy asks before deciding
  void waitForTurn(Micros max_delay_us);
  void onTurnInLine(std::uint64_t place);
  void afterDecision();
  bool acquirePermits();
  void respondDenied();
  // `extra_lines`: header lines already rendered ("Name: value\r\n" each), sent after `extra`.
  void respondLocal(unsigned status, std::string_view message, const http::HeaderList& extra,
                    std::string_view extra_lines = {});
  void writeClient(std::function<void()> then);
  void close();
  // Closes after a local answer to a request whose body was not read (see the definition).
  void lingerThenClose();
  void discardClientInput();
  static constexpr Micros kLingerUs = 5 * kMicrosPerSecond;

  // While a fully read request waits (on a throttle timer or for the upstream), the client
  // socket would have no read outstanding, so a client that hangs up would go unnoticed until
  // the wait ends, holding its concurrency slot and an upstream connection. So the next read
  // starts then: a hang-up ends the exchange early, as nginx does (proxy_ignore_client_abort
  // off), and bytes that arrive are the client's next request, kept in client_buffer_. When the
  // exchange ends first, readHeader() lets that read continue as the next request's first one.
  // (A wait for readability would cost an epoll_ctl per request: Asio re-arms the descriptor
  // for every wait, while a read that finds nothing just parks in the reactor.)
  void watchClient();
  void onClientRead(boost::beast::error_code ec, std::size_t bytes, std::uint64_t generation);
  void newRequestParser();
  void readHeaderFromBuffer();
  void clientGone();

  // Upstream side: connect, stream the request, stream the response (proxy_forwarding.cc).
  void forward();
  void connectUpstream();
  void sendRequestHead();
  void startRequest();
  void pumpRequest();
  // How long the next read of the request body may wait: client_timeout, less what the body is
  // behind client_body_min_rate by (0 once the grace and the bytes' allowance are spent).
  [[nodiscard]] Micros bodyReadTimeout();
  void onRequestChunk(boost::beast::error_code ec);
  void writeUpstream(std::size_t bytes);
  void writeClientChunk(std::size_t bytes);
  void readResponseHeader();
  void onResponseHeader(boost::beast::error_code ec);
  void pumpResponse();
  void onResponseChunk(boost::beast::error_code ec);
  void finishExchange();
  void upstreamFailed(boost::beast::error_code ec);

  // An upstream may answer before it has read the whole request body: a 413 for an upload too
  // large, a 401 before an upload. Waiting to send the whole body first would turn that answer
  // into a 502 (the upstream closes, the body's write fails) or a 504 (it stops reading and the
  // write stalls). So while a body streams, a wait for the upstream's first bytes is out beside
  // the streaming operation; when they come, the streaming stops and the answer is passed on.
  void watchUpstream();
  void onUpstreamReadable(boost::beast::error_code ec, std::uint64_t generation);
  bool retryOnFreshConnection(boost::beast::error_code ec);

  // WebSockets (proxy_tunnel.cc). A GET asking to upgrade to a WebSocket is decided as any
  // request, and sent on with its upgrade; when the upstream answers 101, the session passes
  // the answer on and becomes a tunnel: bytes go both ways as they come, each way until its
  // sender's end of stream, and the tunnel closes when both have ended, either side fails, it
  // idles for websocket_idle_timeout, or the gateway shuts down. Its concurrency permits are
  // held until then.
  struct Tunnel;
  enum class Toward : std::uint8_t { kUpstream, kClient };
  void startTunnel();
  void relay(Toward toward);
  void onRelayRead(Toward toward, boost::beast::error_code ec, std::size_t bytes);
  void armTunnelIdle();

  // Deadlines: one per connection for whichever operation is outstanding (there is one at a
  // time), on the client socket or the upstream one.
  enum class Watch : std::uint8_t { kClient, kUpstream };
  void arm(Watch watch, Micros timeout_us);
  void disarm() noexcept { deadline_.disarm(); }
  void onDeadlinePassed();
  // An error of an upstream operation, as beast::error::timeout when its deadline passed.
  [[nodiscard]] boost::beast::error_code upstreamError(boost::beast::error_code ec) const;

  server::DrainAwareSocket client_;
  boost::asio::io_context& loop_;
  server::ConnectionDeadline<ProxySession> deadline_;
  Watch watch_ = Watch::kClient;  // what the armed deadline is for
  bool timed_out_ = false;
  std::shared_ptr<Gateway::State> state_;
  DdosGuard::ConnectionTicket ticket_;
  UpstreamPool& pool_;
  boost::asio::ip::tcp::endpoint peer_;
  std::string peer_ip_;
  boost::beast::flat_buffer client_buffer_;
  server::BodyRoom client_room_;  // in client_buffer_, for a request body
  server::BodyReads client_body_reads_{client_, client_buffer_};
  FieldArena fields_;  // the header fields of request_ and of the exchange's response
  std::optional<server::BoundedRequestParser<boost::beast::http::buffer_body, ArenaAllocator<char>>>
      request_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<Tunnel> tunnel_;  // set once the exchange became a WebSocket
  bool busy_ = false;  // a request is being handled (touched only on the connection's loop)
  bool watching_client_ = false;        // a watchClient() read is outstanding
  bool header_after_watch_ = false;     // readHeader() waits for that read to complete
  std::uint64_t watch_generation_ = 0;  // tells a closed session's late completion apart
  std::uint64_t upstream_watch_ = 0;    // the same for watchUpstream(): moved on when it ends
  bool client_gone_ = false;  // the client hung up during an upstream operation: end quietly
  // What is being written: a head or chunk framing, and the buffers of one gather write.
  std::string out_;
  std::string frame_;
  GatherList buffers_;
  // Reused by every exchange (their capacity stays): the request head sent upstream, the header
  // lines the gateway adds to the response (rate-limit headers, rendered; cleared as each
  // exchange starts), and what is read from the upstream (empty between exchanges, or the
  // connection is not reused).
  std::string request_head_;
  std::string client_header_lines_;
  boost::beast::flat_buffer upstream_buffer_;
  server::BodyRoom upstream_room_;  // in upstream_buffer_, for a response body
  server::BodyReads upstream_body_reads_{upstream_buffer_};  // attached to each exchange's socket
  // Body bytes pass through this, held from an exchange's first body bytes to its end.
  ChunkBuffer chunk_;
};

}  // namespace sluice::gateway
