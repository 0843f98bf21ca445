#include "sluice/backoff.h"

#include <algorithm>
#include <limits>

namespace sluice {
namespace {

std::uint64_t seedFrom(std::uint64_t seed) {
  if (seed != 0) return seed;
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

Backoff::Backoff(BackoffOptions options) : options_(options), random_(seedFrom(options.seed)) {
  options_.base_us = std::max<Micros>(options_.base_us, 1);
  options_.cap_us = std::max(options_.cap_us, options_.base_us);
}

std::optional<Micros> Backoff::next(std::optional<Micros> server_wait_us) {
  if (retries_ >= options_.max_retries) return std::nullopt;
  if (server_wait_us && *server_wait_us > options_.max_server_wait_us) return std::nullopt;
  // base * 2^retries, doubled step by step so that it stops at cap instead of overflowing (a
  // ceiling past half the largest value goes straight to cap).
  Micros ceiling = options_.base_us;
  for (int i = 0; i < retries_ && ceiling < options_.cap_us; ++i) {
    ceiling = ceiling > options_.cap_us / 2 ? options_.cap_us : ceiling * 2;
  }
  ceiling = std::min(ceiling, options_.cap_us);
  ++retries_;
  if (server_wait_us) {
    // The server's wait plus jitter, saturating: with max_server_wait_us at the largest value,
    // a wait near it wrapped to a negative delay, and the client retried at once.
    const Micros wait_us = std::max<Micros>(*server_wait_us, 0);
    const Micros jitter_us = draw(options_.base_us);
    return wait_us > std::numeric_limits<Micros>::max() - jitter_us
               ? std::numeric_limits<Micros>::max()
               : wait_us + jitter_us;
  }
  return draw(ceiling);
}

Micros Backoff::draw(Micros ceiling_us) {
  return std::uniform_int_distribution<Micros>(0, ceiling_us)(random_);
}

}  // namespace sluice
