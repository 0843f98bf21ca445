#include "store/key_hash.h"

#include <cstring>
#include <random>

namespace sluice {
namespace {

constexpr std::uint64_t kOdd0 = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio
constexpr std::uint64_t kOdd1 = 0xc2b2ae3d27d4eb4fULL;
constexpr std::uint64_t kOdd2 = 0x165667b19e3779f9ULL;

// The high and low halves of a 128-bit product folded together: every input bit reaches every
// output bit in one multiplication.
std::uint64_t foldedMultiply(std::uint64_t a, std::uint64_t b) noexcept {
  __extension__ using UInt128 = unsigned __int128;
  const UInt128 product = static_cast<UInt128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}

std::uint64_t load64(const char* bytes) noexcept {
  std::uint64_t word;
  std::memcpy(&word, bytes, sizeof word);
  return word;
}

std::uint64_t load32(const char* bytes) noexcept {
  std::uint32_t word;
  std::memcpy(&word, bytes, sizeof word);
  return word;
}

// The last 1..15 bytes as two words, read with overlapping loads rather than a byte loop: a
// byte-wise copy followed by a word load stalls on store forwarding. Together with the length,
// which the caller mixes in, the words determine the bytes.
void loadTail(const char* bytes, std::size_t count, std::uint64_t& low,
              std::uint64_t& high) noexcept {
  if (count >= 8) {
    low = load64(bytes);
    high = load64(bytes + count - 8);
  } else if (count >= 4) {
    low = load32(bytes) | (load32(bytes + count - 4) << 32);
  } else if (count > 0) {
    const auto byte = [&](std::size_t i) {
      return std::uint64_t{static_cast<unsigned char>(bytes[i])};
    };
    low = byte(0) | (byte(count / 2) << 8) | (byte(count - 1) << 16);
  }
}

}  // namespace

KeyHasher::KeyHasher() noexcept {
  std::random_device device;
  seed0_ = (std::uint64_t{device()} << 32) ^ device();
  seed1_ = (std::uint64_t{device()} << 32) ^ device();
}

std::uint64_t KeyHasher::operator()(std::string_view key, const LimitSpec& spec) const noexcept {
  const std::uint64_t tweak =
      (static_cast<std::uint64_t>(spec.rate().period_us) << 8) ^
      static_cast<std::uint64_t>(spec.algorithm()) ^
      (countIsPartOfTheCounter(spec.algorithm()) ? foldedMultiply(spec.rate().count, kOdd2) : 0);
  std::uint64_t state = seed0_ ^ foldedMultiply(tweak ^ kOdd0, key.size() ^ seed1_);
  const char* bytes = key.data();
  std::size_t left = key.size();
  while (left >= 16) {
    state = foldedMultiply(load64(bytes) ^ seed1_, load64(bytes + 8) ^ state);
    bytes += 16;
    left -= 16;
  }
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  loadTail(bytes, left, low, high);
  state = foldedMultiply(low ^ seed1_ ^ kOdd1, high ^ state ^ kOdd2);
  return foldedMultiply(state ^ seed0_, kOdd0);
}

}  // namespace sluice
