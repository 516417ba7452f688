#include "lab/lab_policy_editor.h"

#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QSpinBox>

namespace lorascope::ui {

namespace {
QSpinBox* spin(QWidget* parent, int lo, int hi, const QString& special, const QString& name, const QString& tip) {
    auto* s = new QSpinBox(parent);
    s->setRange(lo, hi);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    s->setAccessibleName(name);
    s->setToolTip(tip);
    return s;
}
}  // namespace

LabPolicyEditor::LabPolicyEditor(const QStringList& names, QWidget* parent) : QGroupBox(tr("Policies"), parent) {
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(6, 4, 6, 4);
    grid->setVerticalSpacing(2);
    const QStringList labels = {tr("Batching"), tr("Max rows"), tr("Batch tokens"), tr("Prefill budget"),
                                tr("Prefill chunk"), tr("KV cache (MiB)"), tr("Adapters (MiB)"),
                                tr("Per-token target (ms)")};
    for (int r = 0; r < labels.size(); ++r) grid->addWidget(new QLabel(labels[r], this), r + 1, 0);
    for (int c = 0; c < names.size(); ++c) {
        Column col;
        col.name = names[c];
        auto* header = new QLabel(QStringLiteral("<b>%1</b>").arg(names[c]), this);
        grid->addWidget(header, 0, c + 1, Qt::AlignHCenter);
        col.batching = new QComboBox(this);
        col.batching->addItems({tr("continuous"), tr("static"), tr("continuous, packed")});
        col.batching->setAccessibleName(tr("%1: batching").arg(names[c]));
        col.batching->setToolTip(tr("Static: no request joins until the running batch has drained. Packed: requests "
                                    "submitted together join shortest first (their new tokens and, for a decoder-only model, their "
                                    "prompts weighed by what prefill costs beside decoding), so that most answers come "
                                    "soonest, and "
                                    "the last batch's worth longest first, so that the batch stays full to its end "
                                    "(the longest start last; under a latency target the end joins shortest first too)"));
        col.max_batch = spin(this, 1, 4096, {}, tr("%1: max batch size").arg(names[c]), tr("Rows in a batch at most"));
        col.max_tokens = spin(this, 1, 1 << 20, {}, tr("%1: max batch tokens").arg(names[c]), tr("Tokens in a batch at most, padding counted"));
        // -1 (the engine's default, kPrefillBudgetInTime): the budget in time, from measured step
        // costs; 0: no limit; N: N prompt tokens a step.
        col.prefill_budget = spin(this, int(kPrefillBudgetInTime), 65536, tr("in time"),
                                  tr("%1: prefill budget").arg(names[c]),
                                  tr("Prompt tokens prefilled per step while rows decode: \"in time\" lets measured "
                                     "step costs decide, 0 means no limit"));
        col.prefill_chunk = spin(this, 0, 65536, tr("auto"), tr("%1: prefill chunk").arg(names[c]),
                                 tr("Decoder-only prompts are prefilled in chunks of this many tokens"));
        col.kv_mb = spin(this, 0, 1 << 20, tr("auto"), tr("%1: KV cache size").arg(names[c]), tr("The KV cache's size in MiB"));
        col.adapter_mb = spin(this, 0, 1 << 20, tr("unlimited"), tr("%1: adapter memory budget").arg(names[c]),
                              tr("Resident adapter weights in MiB at most (least recently used evicted first)"));
        col.tpot_target = spin(this, 0, 60000, tr("none"), tr("%1: per-token target").arg(names[c]),
                               tr("Per-token p95 to keep decoding rows within; prefill and newcomers wait for what "
                                  "the rows leave, and up to 4% of token gaps may pass it in steps that prefill "
                                  "waiting prompts whole (needs the budget in time)"));
        const QWidget* widgets[] = {col.batching, col.max_batch,   col.max_tokens, col.prefill_budget,
                                    col.prefill_chunk, col.kv_mb, col.adapter_mb, col.tpot_target};
        for (int r = 0; r < 8; ++r) grid->addWidget(const_cast<QWidget*>(widgets[r]), r + 1, c + 1);
        columns_.push_back(col);
        setPolicy(c, EngineOptions());
    }
}

QString LabPolicyEditor::name(int policy) const { return columns_.at(size_t(policy)).name; }

void LabPolicyEditor::setPolicy(int policy, const EngineOptions& o) {
    const Column& c = columns_.at(size_t(policy));
    c.batching->setCurrentIndex(o.static_batching ? 1 : o.queue_order == QueueOrder::Pack ? 2 : 0);
    c.max_batch->setValue(int(o.max_batch_size));
    c.max_tokens->setValue(int(o.max_batch_tokens));
    c.prefill_budget->setValue(int(qMax<int64_t>(kPrefillBudgetInTime, o.prefill_budget_tokens)));
    c.prefill_chunk->setValue(int(o.prefill_chunk_tokens));
    c.kv_mb->setValue(int(o.kv_cache_mb));
    c.adapter_mb->setValue(int(o.adapter_memory_budget / (1024 * 1024)));
    c.tpot_target->setValue(int(o.tpot_target_ms));
}

EngineOptions LabPolicyEditor::apply(int policy, EngineOptions o) const {
    const Column& c = columns_.at(size_t(policy));
    o.static_batching = c.batching->currentIndex() == 1;
    o.queue_order = c.batching->currentIndex() == 2 ? QueueOrder::Pack : QueueOrder::Arrival;
    o.max_batch_size = c.max_batch->value();
    o.max_batch_tokens = c.max_tokens->value();
    o.prefill_budget_tokens = c.prefill_budget->value();
    o.prefill_chunk_tokens = c.prefill_chunk->value();
    o.kv_cache_mb = c.kv_mb->value();
    o.adapter_memory_budget = int64_t(c.adapter_mb->value()) * 1024 * 1024;
    o.tpot_target_ms = c.tpot_target->value();
    return o;
}

QString LabPolicyEditor::describe(int policy) const {
    const Column& c = columns_.at(size_t(policy));
    QString text = tr("%1, %2 rows").arg(c.batching->currentText()).arg(c.max_batch->value());
    if (c.prefill_budget->value() > 0) text += tr(", prefill %1").arg(c.prefill_budget->value());
    if (c.prefill_budget->value() == 0) text += tr(", prefill unlimited");
    if (c.tpot_target->value() > 0) text += tr(", target %1 ms").arg(c.tpot_target->value());
    if (c.kv_mb->value() > 0) text += tr(", KV %1 MiB").arg(c.kv_mb->value());
    return text;
}

}  // namespace lorascope::ui
