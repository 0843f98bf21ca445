// The signature check of an RS256 or ES256 JWS with OpenSSL, against a public key read once.
// JwtVerifier runs it before libjwt's full decode: libjwt 1.10 re-reads the PEM key on every
// call (about 0.3 ms), so without it every forged token cost that much before being refused.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <openssl/types.h>

namespace sluice::policy {

using PublicKey = std::shared_ptr<EVP_PKEY>;

// The key of a PEM "PUBLIC KEY" block, or null when there is none.
[[nodiscard]] PublicKey readPublicKey(std::string_view pem);

// The bytes of unpadded base64url `text` (the alphabet already checked), or nullopt when its
// length cannot end on a byte or its last character sets bits past the last byte (RFC 4648
// section 3.5: one text per bytes).
[[nodiscard]] std::optional<std::string> decodeBase64Url(std::string_view text);

// Whether `signature` (base64url) signs `signing_input` (the token up to its second dot) under
// `key`: RSASSA-PKCS1-v1_5 with SHA-256 when `rsa`, else ECDSA P-256 with SHA-256 whose
// signature is the 64 bytes of r and s (RFC 7518 3.3, 3.4). Never throws.
[[nodiscard]] bool signatureVerifies(EVP_PKEY* key, bool rsa, std::string_view signing_input,
                                     std::string_view signature) noexcept;

}  // namespace sluice::policy
