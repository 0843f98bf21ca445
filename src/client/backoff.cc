#include "sluice/backoff.h"

#include <algorithm>

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
  // base * 2^retries, doubled step by step so that it stops at cap instead of overflowing.
  Micros ceiling = options_.base_us;
  for (int i = 0; i < retries_ && ceiling < options_.cap_us; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, options_.cap_us);
  ++retries_;
  if (server_wait_us) return std::max<Micros>(*server_wait_us, 0) + draw(options_.base_us);
  return draw(ceiling);
}

Micros Backoff::draw(Micros ceiling_us) {
  return std::uniform_int_distribution<Micros>(0, ceiling_us)(random_);
}

}  // namespace sluice
