#include "store/redis/redis_keys.h"

#include <array>

#include "store/key_hash.h"

namespace sluice::redis {
namespace {

// FNV-1a: stable across processes and machines (every Sluice node must pick the same slot),
// which the seeded in-memory key hash deliberately is not.
std::uint64_t stableHash(std::string_view text) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

constexpr std::array<std::uint16_t, 256> crc16Table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    std::uint16_t crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<std::uint16_t, 256> kCrc16 = crc16Table();

std::uint16_t crc16(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<std::uint16_t>((crc << 8) ^
                                     kCrc16[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
  }
  return crc;
}

}  // namespace

std::string redisKey(std::string_view prefix, const LimitCheck& check) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::uint64_t tag = stableHash(check.group.empty() ? check.key : check.group);
  std::string key;
  key.reserve(20 + prefix.size() + check.key.size() + 40);
  key += '{';
  for (int shift = 60; shift >= 0; shift -= 4) key += kHex[(tag >> shift) & 0xf];
  key += '}';
  key += prefix;
  key += check.key;
  const LimitSpec& spec = *check.spec;
  key += '|';
  key += std::to_string(static_cast<int>(spec.algorithm()));
  key += '|';
  key += std::to_string(spec.rate().period_us);
  if (countIsPartOfTheCounter(spec.algorithm())) {
    key += '|';
    key += std::to_string(spec.rate().count);
  }
  return key;
}

std::uint16_t hashSlot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) % kClusterSlots;
}

}  // namespace sluice::redis
