#include "policy/api_key_hash.h"

#include <openssl/evp.h>

namespace sluice::policy {
namespace {

constexpr std::size_t kIdHexDigits = 32;  // 128 bits: collisions are not a practical concern

}  // namespace

std::string hashApiKey(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "k_";
  for (std::size_t i = 0; i < kIdHexDigits / 2 && i < length; ++i) {
    id += kHex[digest[i] >> 4];
    id += kHex[digest[i] & 0xf];
  }
  return id;
}

std::string apiKeyIdFromSha256(std::string_view spelled) {
  constexpr std::string_view kPrefix = "sha256:";
  if (!spelled.starts_with(kPrefix) || spelled.size() != kPrefix.size() + 64) return {};
  std::string id = "k_";
  for (char c : spelled.substr(kPrefix.size())) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return {};
  }
  for (char c : spelled.substr(kPrefix.size(), kIdHexDigits)) {
    id += static_cast<char>(c >= 'A' && c <= 'F' ? c + 32 : c);
  }
  return id;
}

}  // namespace sluice::policy
