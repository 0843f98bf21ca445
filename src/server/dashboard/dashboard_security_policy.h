// The Content-Security-Policy the dashboard is served with. The page's one inline script and
// one inline style are allowed by their SHA-256 (CSP Level 2 hash sources) rather than by
// 'unsafe-inline': a browser then runs those two blocks as embedded at build time and nothing
// else inline, so markup that some future bug let into the page could not run script.
#pragma once

#include <string>
#include <string_view>

namespace sluice::server {

// "default-src 'none'; script-src 'sha256-…'; style-src 'sha256-…'; connect-src 'self';
// frame-ancestors 'none'", computed from dashboardPage() once.
[[nodiscard]] std::string_view dashboardSecurityPolicy();

// A CSP hash source for an inline element's text: "'sha256-<base64 of its SHA-256>'". The text
// is hashed exactly as it stands between the element's tags, as browsers hash it.
[[nodiscard]] std::string cspHashSource(std::string_view element_text);

// The text between `<tag>` and the next `</tag>` in `page`; empty when the page has none.
[[nodiscard]] std::string_view inlineElementText(std::string_view page, std::string_view tag);

}  // namespace sluice::server
