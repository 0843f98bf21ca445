#include "http/auth_subrequest.h"

namespace sluice::http {

policy::RequestView viewFromSubrequest(
    const boost::beast::http::request<boost::beast::http::string_body>& subrequest,
    const boost::asio::ip::address& peer) {
  policy::RequestView view;
  view.peer = peer;
  for (const auto& field : subrequest) {
    view.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  const auto first_of = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
      if (auto value = view.header(name)) return std::optional<std::string>(*value);
    }
    return std::optional<std::string>();
  };
  view.method = first_of({"X-Original-Method", "X-Forwarded-Method"})
                    .value_or(std::string(subrequest.method_string()));
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  view.path =
      first_of({"X-Original-URI", "X-Forwarded-Uri"}).value_or(std::string(subrequest.target()));
  view.path = policy::normalizePath(view.path);
  return view;
}

}  // namespace sluice::http
