// Test helper (http_client.cc): a blocking HTTP/1.1 client over loopback, one connection per call
// (or one for a series of calls), with a 10 s watchdog so a broken server fails the test instead of
// hanging it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

namespace sluice::testing {

struct HttpReply {
  int status = 0;  // 0 when the connection failed or closed without an answer
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  [[nodiscard]] std::string header(const std::string& lower_name) const {
    const auto found = headers.find(lower_name);
    return found == headers.end() ? "" : found->second;
  }
};

// Reads one answer (after any interim 1xx) from `stream`; status 0 on an error.
HttpReply readReply(boost::beast::tcp_stream& stream, boost::beast::flat_buffer& buffer);

// `request` sent `times` times, one after another, on one kept-alive connection: the replies, in
// order, as many as came before the connection failed or closed.
std::vector<HttpReply> httpRepeated(
    const boost::asio::ip::tcp::endpoint& server,
    const boost::beast::http::request<boost::beast::http::string_body>& request, int times);

boost::beast::http::request<boost::beast::http::string_body> httpRequest(
    boost::beast::http::verb method, const std::string& target, const std::string& body = "",
    const std::vector<std::pair<std::string, std::string>>& headers = {});

// `times` bodiless requests on one kept-alive connection (see httpRepeated).
std::vector<HttpReply> httpCallsOnOneConnection(const boost::asio::ip::tcp::endpoint& server,
                                                boost::beast::http::verb method,
                                                const std::string& target, int times);

HttpReply httpCall(const boost::asio::ip::tcp::endpoint& server, boost::beast::http::verb method,
                   const std::string& target, const std::string& body = "",
                   const std::vector<std::pair<std::string, std::string>>& headers = {});

}  // namespace sluice::testing
