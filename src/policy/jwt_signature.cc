#include "policy/jwt_signature.h"

#include <cstdint>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

namespace sluice::policy {
namespace {

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct DigestContextFree {
  void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
};
struct EcdsaSignatureFree {
  void operator()(ECDSA_SIG* signature) const noexcept { ECDSA_SIG_free(signature); }
};

int sextet(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '-' ? 62 : 63;  // '_'; the caller has checked the alphabet
}

// ES256's r || s, 32 bytes each, as the DER SEQUENCE OpenSSL verifies; nullopt when malformed.
std::optional<std::string> derFromRaw(const std::string& raw) {
  constexpr std::size_t kHalf = 32;
  if (raw.size() != 2 * kHalf) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  std::unique_ptr<ECDSA_SIG, EcdsaSignatureFree> signature(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes, kHalf, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + kHalf, kHalf, nullptr);
  if (!signature || r == nullptr || s == nullptr || ECDSA_SIG_set0(signature.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  const int length = i2d_ECDSA_SIG(signature.get(), &der);
  if (length <= 0) return std::nullopt;
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(length));
  OPENSSL_free(der);
  return out;
}

}  // namespace

PublicKey readPublicKey(std::string_view pem) {
  const std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  ERR_clear_error();
  return PublicKey(key, [](EVP_PKEY* owned) { EVP_PKEY_free(owned); });
}

std::optional<std::string> decodeBase64Url(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;  // no byte ends there
  std::string bytes;
  bytes.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t buffer = 0;
  int buffered_bits = 0;
  for (const char c : text) {
    buffer = ((buffer << 6) | static_cast<std::uint32_t>(sextet(c))) & 0xffffff;
    buffered_bits += 6;
    if (buffered_bits >= 8) {
      buffered_bits -= 8;
      bytes.push_back(static_cast<char>((buffer >> buffered_bits) & 0xff));
    }
  }
  // The last character's bits past the last byte must be zero, as an encoder writes them: else
  // one token had 4 or 16 spellings, each verified and remembered apart, and a client holding a
  // few tokens could keep the verifier's cache clearing (every request then paid a verify).
  if (buffered_bits > 0 && (buffer & ((1U << buffered_bits) - 1)) != 0) return std::nullopt;
  return bytes;
}

bool signatureVerifies(EVP_PKEY* key, bool rsa, std::string_view signing_input,
                       std::string_view signature) noexcept {
  try {
    std::optional<std::string> bytes = decodeBase64Url(signature);
    if (bytes && !rsa) bytes = derFromRaw(*bytes);
    if (!bytes || key == nullptr) return false;
    const std::unique_ptr<EVP_MD_CTX, DigestContextFree> context(EVP_MD_CTX_new());
    const bool verified =
        context && EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key) == 1 &&
        EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(bytes->data()),
                         bytes->size(),
                         reinterpret_cast<const unsigned char*>(signing_input.data()),
                         signing_input.size()) == 1;
    ERR_clear_error();  // a failed check leaves errors queued for this thread's next OpenSSL use
    return verified;
  } catch (...) {  // allocation failure
    ERR_clear_error();
    return false;
  }
}

}  // namespace sluice::policy
