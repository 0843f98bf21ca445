// How a limit turns a request into a counter key. A selector is one or more parts, joined:
//   global               one counter for everyone
//   ip                   the client address (after trusted proxies)
//   api_key              the presented API key, hashed
//   client               a known API key if there is one, else the client address
//   tier                 the caller's tier name
//   header:<Name>        a request header's value
//   cookie:<name>        a cookie's value
//   jwt:<claim>          a claim of a verified JWT
//   json:<path>          a JSON path over the request document (see RequestContext)
//   method, path, route  the request method, its path, or the limit's route pattern
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/json_path.h"
#include "policy/request_context.h"
#include "sluice/result.h"

namespace sluice::policy {

class KeySelector {
 public:
  enum class Kind {
    kGlobal,
    kIp,
    kApiKey,
    kClient,
    kTier,
    kHeader,
    kCookie,
    kJwtClaim,
    kJsonPath,
    kMethod,
    kPath,
    kRoute
  };

  // Parses each part; the error names the part and what is accepted.
  static Result<KeySelector> parse(const std::vector<std::string>& parts);

  // What appendKey found.
  enum class Read {
    kKeyed,    // every part has a value: `out` holds the key
    kMissing,  // a part has none (no such header, cookie, claim or API key, or an empty one)
    // A part has two values (a header on lines that differ, a cookie sent twice, two API keys
    // or tokens): keying either would let the client choose, and skipping the limit too. The
    // caller counts the client by address, whatever when_missing says, in the same counter as
    // a missing part's address fallback (a second one would double an anonymous budget).
    kInDoubt,
  };

  // Thread-safe. Appends the key for `context` to `out`, each part length-prefixed (see
  // appendCounterPart). `route` is the limit's route description; a `path` part counts the
  // request's folded path (RequestView::foldedPath), in lower case when `fold_path_case` (for a
  // limit matching paths in any case). Unless it returns kKeyed, `out` is left unspecified.
  [[nodiscard]] Read appendKey(const RequestContext& context, std::string_view route,
                               std::string& out, bool fold_path_case = false) const;

  // Whether a part reads a verified token's claims (`jwt:`, or a `json:` path under
  // $.request.parsed_token), which only a verified token provides.
  [[nodiscard]] bool readsJwtClaims() const noexcept;
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  struct Part {
    Kind kind;
    std::string name;              // header, cookie or claim name
    std::optional<JsonPath> path;  // for kJsonPath
  };
  // One part of appendKey.
  static Read appendPart(const Part& part, const RequestContext& context, std::string_view route,
                         std::string& out, bool fold_path_case);

  std::vector<Part> parts_;
  std::string text_;
};

// Appends "<length>:<part>". Counter keys are built only from such pieces and single marker
// characters, so no header value can spell another client's key (as "a|b" could with a plain
// separator, or "ip=10.1.2.3" could spell the address fallback).
void appendCounterPart(std::string& out, std::string_view part);

// Appends the address fallback, for a key whose part is missing or in doubt: a marker no
// length-prefixed part can spell, then the client's address (its network for IPv6).
void appendAddressFallback(const RequestContext& context, std::string& out);

}  // namespace sluice::policy
