// Latency of several HTTP endpoints at one request in flight, measured interleaved: one
// keep-alive connection per endpoint, and one request to each in every cycle, each after the
// previous answer. Compared one after the other, as separate 8-second runs, the p99s of this VM
// swing by hundreds of microseconds between runs; interleaved, every endpoint sees the same
// stalls, so the differences between their percentiles mean something. The order within a
// cycle is shuffled: in a fixed order, whichever endpoint came right after a given one read
// about 60 µs slower at p50 (how the VM wakes an idle vCPU), whichever it was.
//
// Usage: sluice_latency_probe SECONDS NAME=HOST:PORT/PATH...
// Prints, per endpoint: name, requests, p50, p99 and p99.9 in microseconds. Exits 1 with a
// message when an endpoint cannot be reached or answers other than 2xx with Content-Length.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;

// Every endpoint together stops after this many requests, whatever the time: a bound on memory.
constexpr std::size_t kMaxRequests = 20'000'000;

struct Endpoint {
  std::string name;
  std::string host;
  std::uint16_t port = 0;
  std::string request;  // the whole GET, sent as is each time
  int socket = -1;
  std::string buffer;  // bytes read past the previous response
  std::vector<double> latencies_us;
};

Endpoint parseEndpoint(std::string_view text) {
  const auto equals = text.find('=');
  const auto colon = text.find(':', equals == std::string_view::npos ? 0 : equals);
  const auto slash = text.find('/', colon == std::string_view::npos ? 0 : colon);
  if (equals == std::string_view::npos || colon == std::string_view::npos ||
      slash == std::string_view::npos) {
    throw std::runtime_error("expected NAME=HOST:PORT/PATH, got " + std::string(text));
  }
  Endpoint endpoint;
  endpoint.name = std::string(text.substr(0, equals));
  endpoint.host = std::string(text.substr(equals + 1, colon - equals - 1));
  const int port = std::atoi(std::string(text.substr(colon + 1, slash - colon - 1)).c_str());
  if (port <= 0 || port > 65535) throw std::runtime_error("bad port in " + std::string(text));
  endpoint.port = static_cast<std::uint16_t>(port);
  const std::string host_port(text.substr(equals + 1, slash - equals - 1));
  endpoint.request = "GET " + std::string(text.substr(slash)) + " HTTP/1.1\r\nHost: " + host_port +
                     "\r\nUser-Agent: sluice-latency-probe\r\n\r\n";
  return endpoint;
}

void connectTo(Endpoint& endpoint) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(endpoint.port);
  if (inet_pton(AF_INET, endpoint.host.c_str(), &address.sin_addr) != 1) {
    throw std::runtime_error(endpoint.name + ": not an IPv4 address: " + endpoint.host);
  }
  endpoint.socket = ::socket(AF_INET, SOCK_STREAM, 0);
  if (endpoint.socket < 0) throw std::runtime_error("socket() failed");
  const int on = 1;
  ::setsockopt(endpoint.socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  const timeval timeout{5, 0};  // a stuck endpoint ends the run instead of hanging it
  ::setsockopt(endpoint.socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(endpoint.socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(endpoint.socket, reinterpret_cast<const sockaddr*>(&address), sizeof address) !=
      0) {
    throw std::runtime_error(endpoint.name + ": cannot connect to " + endpoint.host + ":" +
                             std::to_string(endpoint.port));
  }
}

// Reads more bytes into the endpoint's buffer; throws when the connection ends or times out.
void readMore(Endpoint& endpoint) {
  char chunk[16384];
  const ssize_t got = ::recv(endpoint.socket, chunk, sizeof chunk, 0);
  if (got <= 0) throw std::runtime_error(endpoint.name + ": connection closed or timed out");
  endpoint.buffer.append(chunk, static_cast<std::size_t>(got));
}

std::size_t contentLength(std::string_view head, const std::string& name) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) throw std::runtime_error(name + ": response without Content-Length");
  return static_cast<std::size_t>(std::strtoull(lower.c_str() + at + 17, nullptr, 10));
}

// One request and its whole response; the latency goes to the endpoint's list.
void exchange(Endpoint& endpoint) {
  const auto start = SteadyClock::now();
  std::string_view out(endpoint.request);
  while (!out.empty()) {
    const ssize_t sent = ::send(endpoint.socket, out.data(), out.size(), MSG_NOSIGNAL);
    if (sent <= 0) throw std::runtime_error(endpoint.name + ": send failed");
    out.remove_prefix(static_cast<std::size_t>(sent));
  }
  std::size_t head_end;
  while ((head_end = endpoint.buffer.find("\r\n\r\n")) == std::string::npos) readMore(endpoint);
  const std::string_view head(endpoint.buffer.data(), head_end + 2);
  if (!head.starts_with("HTTP/1.1 2")) {
    throw std::runtime_error(endpoint.name +
                             ": not a 2xx answer: " + std::string(head.substr(0, head.find('\r'))));
  }
  const std::size_t total = head_end + 4 + contentLength(head, endpoint.name);
  while (endpoint.buffer.size() < total) readMore(endpoint);
  endpoint.latencies_us.push_back(
      std::chrono::duration<double, std::micro>(SteadyClock::now() - start).count());
  endpoint.buffer.erase(0, total);
}

double percentile(const std::vector<double>& sorted, double fraction) {
  const auto rank = static_cast<std::size_t>(fraction * static_cast<double>(sorted.size()));
  return sorted[std::min(rank, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SECONDS NAME=HOST:PORT/PATH...\n", argv[0]);
    return 2;
  }
  try {
    const double seconds = std::atof(argv[1]);
    if (!(seconds > 0 && seconds <= 3600)) throw std::runtime_error("SECONDS must be in (0, 3600]");
    std::vector<Endpoint> endpoints;
    for (int i = 2; i < argc; ++i) endpoints.push_back(parseEndpoint(argv[i]));
    for (Endpoint& endpoint : endpoints) {
      connectTo(endpoint);
      exchange(endpoint);  // a first request opens the proxies' upstream connections
      endpoint.latencies_us.clear();
    }
    std::vector<Endpoint*> order;
    for (Endpoint& endpoint : endpoints) order.push_back(&endpoint);
    std::mt19937 shuffler(42);  // fixed: runs differ only by what they measure
    const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
    for (std::size_t sent = 0; sent < kMaxRequests && SteadyClock::now() < end;) {
      std::shuffle(order.begin(), order.end(), shuffler);
      for (Endpoint* endpoint : order) exchange(*endpoint);
      sent += order.size();
    }
    for (Endpoint& endpoint : endpoints) {
      std::sort(endpoint.latencies_us.begin(), endpoint.latencies_us.end());
      std::printf("%s %zu %.1f %.1f %.1f\n", endpoint.name.c_str(), endpoint.latencies_us.size(),
                  percentile(endpoint.latencies_us, 0.5), percentile(endpoint.latencies_us, 0.99),
                  percentile(endpoint.latencies_us, 0.999));
      ::close(endpoint.socket);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sluice_latency_probe: %s\n", error.what());
    return 1;
  }
  return 0;
}
