// The frontier view's sweep: one workload under several settings of one knob, the per-token
// target (EngineOptions::tpot_target_ms, with the budget in time) or the prefill budget in tokens
// (EngineOptions::prefill_budget_tokens), each a policy of its own, with static batching first as
// the reference point. Every other option is the base policy's (the lab's policy A).
#pragma once

#include <QList>
#include <QString>
#include <vector>

#include "lab/lab_runner.h"

namespace lorascope::ui {

enum class LabSweepKind { TpotTarget, PrefillBudget };

// At most this many values: each is a whole run of the workload.
constexpr int kMaxSweepValues = 8;

// "2, 4, 8" -> {2, 4, 8}: positive whole numbers, separated by commas or spaces, at most
// kMaxSweepValues, in the order given; empty (and *error set) for anything else.
QList<int> parseSweepValues(const QString& text, QString* error);

// Static batching (named "static"), then one continuous policy per value ("target 4 ms",
// "budget 16"), each `base` with the knob set and the other knob neutral (no target; the budget
// in time under a target, which needs it).
std::vector<LabPolicy> labSweepPolicies(const EngineOptions& base, LabSweepKind kind, const QList<int>& values);

}  // namespace lorascope::ui
