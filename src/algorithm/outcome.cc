#include "sluice/outcome.h"

namespace sluice {

std::string_view denyReasonName(DenyReason reason) noexcept {
  switch (reason) {
    case DenyReason::kNone:
      return "none";
    case DenyReason::kOverLimit:
      return "over_limit";
    case DenyReason::kCostExceedsLimit:
      return "cost_exceeds_limit";
    case DenyReason::kStoreUnavailable:
      return "store_unavailable";
    case DenyReason::kInvalidCheck:
      return "invalid_check";
  }
  return "unknown";
}

}  // namespace sluice
