// Test helper: the blocking HTTP/1.1 client of http_client.h.
#include "support/http_client.h"

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sluice::testing {

HttpReply readReply(boost::beast::tcp_stream& stream, boost::beast::flat_buffer& buffer) {
  namespace http = boost::beast::http;
  boost::beast::error_code ec;
  std::optional<http::response_parser<http::string_body>> parsed;
  do {  // interim 1xx answers (100 Continue) come before the real one
    parsed.emplace();
    parsed->body_limit(64 << 20);
    http::read(stream, buffer, *parsed, ec);
    if (ec) return {};
  } while (parsed->get().result_int() >= 100 && parsed->get().result_int() < 200);
  auto& parser = *parsed;
  HttpReply reply;
  reply.status = static_cast<int>(parser.get().result_int());
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    reply.headers[name] = std::string(field.value());
  }
  reply.body = parser.get().body();
  return reply;
}

std::vector<HttpReply> httpRepeated(
    const boost::asio::ip::tcp::endpoint& server,
    const boost::beast::http::request<boost::beast::http::string_body>& request, int times) {
  namespace beast = boost::beast;
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  beast::error_code ec;
  stream.connect(server, ec);
  if (ec) return {};
  beast::flat_buffer buffer;
  std::vector<HttpReply> replies;
  for (int i = 0; i < times; ++i) {
    beast::http::write(stream, request, ec);
    if (ec) break;
    HttpReply reply = readReply(stream, buffer);
    if (reply.status == 0) break;
    replies.push_back(std::move(reply));
  }
  return replies;
}

boost::beast::http::request<boost::beast::http::string_body> httpRequest(
    boost::beast::http::verb method, const std::string& target, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  namespace http = boost::beast::http;
  http::request<http::string_body> request{method, target, 11};
  request.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  return request;
}

std::vector<HttpReply> httpCallsOnOneConnection(const boost::asio::ip::tcp::endpoint& server,
                                                boost::beast::http::verb method,
                                                const std::string& target, int times) {
  return httpRepeated(server, httpRequest(method, target), times);
}

HttpReply httpCall(const boost::asio::ip::tcp::endpoint& server, boost::beast::http::verb method,
                   const std::string& target, const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<HttpReply> replies =
      httpRepeated(server, httpRequest(method, target, body, headers), 1);
  return replies.empty() ? HttpReply{} : std::move(replies.front());
}

}  // namespace sluice::testing
