// Everything an embedder needs.
#pragma once

#include "sluice/backoff.h"
#include "sluice/decision.h"
#include "sluice/limit_spec.h"
#include "sluice/limiter.h"
#include "sluice/outcome.h"
#include "sluice/pacer.h"
#include "sluice/rate.h"
#include "sluice/result.h"
#include "sluice/server_wait.h"
#include "sluice/time.h"
