#include "http/auth_subrequest.h"

#include "policy/origin_form.h"

namespace sluice::http {

policy::RequestView viewFromSubrequest(
    const boost::beast::http::request<boost::beast::http::string_body>& subrequest,
    const boost::asio::ip::address& peer, std::string_view uri_header,
    std::string_view method_header) {
  policy::RequestView view;
  view.peer = peer;
  for (const auto& field : subrequest) {
    view.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  view.method = std::string(view.header(method_header).value_or(subrequest.method_string()));
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  const std::string_view uri = view.header(uri_header).value_or(subrequest.target());
  // A proxy may pass the URI as the client sent it, in absolute form: its path is the path.
  view.setPath(policy::originTarget(uri));
  return view;
}

}  // namespace sluice::http
