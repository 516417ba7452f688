// Why an engine step prefilled what it did, in words for a tooltip: its row limit, the margin its
// prefill was planned with under a latency target, and whether it was a bulk step (StepStats).
// Shared by the inspector's step table and the lab's timeline: a batch whose rows drain while
// requests wait reads as a row limit, a margin that keeps every chunk out, or no bulk step.
#pragma once

#include <QString>

#include "lorascope/engine.h"

namespace lorascope::ui {

// "" when the step carries none of them (an engine that does not report them).
QString stepPrefillReason(const StepStats& s);

}  // namespace lorascope::ui
