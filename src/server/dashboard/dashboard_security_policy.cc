#include "server/dashboard/dashboard_security_policy.h"

#include <array>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "server/dashboard/dashboard_page.h"

namespace sluice::server {

std::string cspHashSource(std::string_view element_text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(element_text.data()), element_text.size(),
         digest.data());
  // Base64 of 32 bytes: 44 characters, and EVP_EncodeBlock writes a terminating NUL after them.
  std::array<unsigned char, 4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1> base64{};
  const int length = EVP_EncodeBlock(base64.data(), digest.data(), digest.size());
  return "'sha256-" + std::string(reinterpret_cast<const char*>(base64.data()), length) + "'";
}

std::string_view inlineElementText(std::string_view page, std::string_view tag) {
  const std::string opening = "<" + std::string(tag) + ">";
  const std::string closing = "</" + std::string(tag) + ">";
  const std::size_t open = page.find(opening);
  if (open == std::string_view::npos) return {};
  const std::size_t begin = open + opening.size();
  const std::size_t end = page.find(closing, begin);
  if (end == std::string_view::npos) return {};
  return page.substr(begin, end - begin);
}

std::string_view dashboardSecurityPolicy() {
  // The page cannot change while the process runs: hashed once, on first use.
  static const std::string policy = [] {
    const std::string_view page = dashboardPage();
    // Nothing else may load or run in the page, and no other site may frame it; it reads
    // /metrics of the listener that served it.
    return "default-src 'none'; script-src " + cspHashSource(inlineElementText(page, "script")) +
           "; style-src " + cspHashSource(inlineElementText(page, "style")) +
           "; connect-src 'self'; frame-ancestors 'none'";
  }();
  return policy;
}

}  // namespace sluice::server
