// A Beast HTTP parser that ends the parse with an error, rather than an exception, on a field
// longer than a message can hold, and bounds a chunked body's trailer as the header is bounded.
//
// Why: Beast keeps each field's name and value lengths in 16 bits and throws std::length_error
// past them (basic_fields::insert), and its parser applies header_limit to the header block
// only. A chunked body's trailer field of 65,534 bytes or more therefore threw out of the read,
// where nothing catches it: one request ended the process, every in-memory counter with it.
// Trailers were bounded only by the read buffer's size besides. Here a field too long for
// Beast, or trailer fields past trailer_limit in all, end the parse with
// http::error::header_limit, which each door answers as it answers an over-long header block.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>

namespace sluice::server {

template <bool isRequest, class Body, class Allocator = std::allocator<char>>
class BoundedParser : public boost::beast::http::parser<isRequest, Body, Allocator> {
  using Base = boost::beast::http::parser<isRequest, Body, Allocator>;

 public:
  using Base::Base;

  // The most bytes a chunked body's trailer fields may take, names, values and line endings
  // counted (default 64 KiB). Set it with header_limit, to the same bound.
  void trailer_limit(std::size_t bytes) noexcept { trailer_limit_ = bytes; }

 private:
  // Beast's bound (fields.hpp: a name or value and its two framing bytes within 16 bits).
  static constexpr std::size_t kMostFieldBytes = std::numeric_limits<std::uint16_t>::max() - 2;

  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::beast::error_code& ec) override {
    if (name_string.size() > kMostFieldBytes || value.size() > kMostFieldBytes) {
      ec = boost::beast::http::error::header_limit;
      return;
    }
    if (this->is_header_done()) {  // a trailer field
      trailer_bytes_ += name_string.size() + value.size() + 4;
      if (trailer_bytes_ > trailer_limit_) {
        ec = boost::beast::http::error::header_limit;
        return;
      }
    }
    this->get().insert(name, name_string, value);
  }

  std::size_t trailer_limit_ = 64 * 1024;
  std::size_t trailer_bytes_ = 0;
};

template <class Body, class Allocator = std::allocator<char>>
using BoundedRequestParser = BoundedParser<true, Body, Allocator>;
template <class Body, class Allocator = std::allocator<char>>
using BoundedResponseParser = BoundedParser<false, Body, Allocator>;

}  // namespace sluice::server
