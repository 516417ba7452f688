#include "compare/comparison_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTabWidget>
#include <QEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "common/theme.h"
#include "compare/blend_panel.h"
#include "compare/token_columns.h"
#include "compare/token_stream_view.h"
#include "requests/request_table_model.h"
#include "common/side_scroll.h"

namespace lorascope::ui {

ComparisonView::ComparisonView(RequestTableModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    pages_ = new QTabWidget(this);
    pages_->setAccessibleName(tr("Comparison pages"));
    pages_->setDocumentMode(true);
    outer->addWidget(pages_);
    // The composer and blend rows ask ~690 px under GNOME's 11 pt font: the page scrolls sideways
    // rather than push the window past a 1280 px screen (test_ui_window_fit_fake_engine).
    auto* generations = new QWidget(pages_);
    pages_->addTab(sideScrolling(generations, pages_), tr("Generations"));
    auto* layout = new QVBoxLayout(generations);
    auto* top = new QHBoxLayout;
    auto* label = new QLabel(tr("Comparison"), this);
    groups_ = new QComboBox(this);
    groups_->setAccessibleName(tr("Comparison to show"));
    groups_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    label->setBuddy(groups_);
    legend_ = new QLabel(this);
    refreshLegend();
    legend_->setWordWrap(true);
    top->addWidget(label);
    top->addWidget(groups_);
    top->addWidget(legend_, 1);
    blend_toggle_ = new QCheckBox(tr("&Blend"), this);   // Alt+B, for keyboard users (and scripts/window-check)
    blend_toggle_->setAccessibleName(tr("Blend adapters"));
    blend_toggle_->setToolTip(tr("Add a column for a weighted merge of adapters, regenerated as you move the sliders"));
    top->addWidget(blend_toggle_);
    layout->addLayout(top);
    prompt_ = new QLabel(this);
    prompt_->setWordWrap(true);
    prompt_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(prompt_);
    blend_ = new BlendPanel(this);
    blend_->hide();
    layout->addWidget(blend_);
    connect(blend_toggle_, &QCheckBox::toggled, blend_, &QWidget::setVisible);
    connect(blend_, &BlendPanel::blendChanged, this, [this](const AdapterMerge& merge) {
        if (group_ > 0 && blend_toggle_->isChecked()) Q_EMIT blendRequested(group_, merge);
    });
    columns_ = new TokenColumns(tr("Comparison columns"), this);
    layout->addWidget(columns_, 1);

    connect(groups_, qOverload<int>(&QComboBox::activated), this, [this](int i) { showGroup(groups_->itemData(i).toInt()); });
    connect(model_, &QAbstractItemModel::dataChanged, this, &ComparisonView::refresh);
    connect(model_, &QAbstractItemModel::rowsInserted, this, [this] { refreshGroups(); refresh(); });
    connect(model_, &QAbstractItemModel::rowsRemoved, this, [this] { refreshGroups(); rebuildColumns(); });
    connect(model_, &QAbstractItemModel::modelReset, this, [this] { refreshGroups(); rebuildColumns(); });
    refreshGroups();
}

void ComparisonView::setAdapters(const QStringList& names) { blend_->setAdapters(names); }

void ComparisonView::setBlendTicket(int compare_group, Ticket ticket) {
    auto it = blend_tickets_.find(compare_group);
    // The newer blend replaces the older in the comparison; the older stays on the board.
    if (it != blend_tickets_.end() && it->second != ticket) model_->setCompareGroup(it->second, 0);
    blend_tickets_[compare_group] = ticket;
}

void ComparisonView::addPage(QWidget* page, const QString& title) { pages_->addTab(page, title); }

void ComparisonView::showPage(QWidget* page) { pages_->setCurrentWidget(page); }
void ComparisonView::showGenerations() { pages_->setCurrentIndex(0); }

void ComparisonView::refreshLegend() {
    legend_->setText(tr("<span style='background:%1; color:%2'>&nbsp;highlighted&nbsp;</span> token differs from the "
                        "reference column (the base model, else the first) at the same position; hover a token for "
                        "its alternatives (click one to continue from it) or its logprob")
                         .arg(differHighlight(palette()).name(), palette().color(QPalette::Text).name()));
}

void ComparisonView::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::PaletteChange) refreshLegend();
}

void ComparisonView::refreshGroups() {
    std::vector<int> seen;
    const QSignalBlocker block(groups_);
    groups_->clear();
    for (const auto& r : model_->records()) {
        if (r.compare_group <= 0 || std::find(seen.begin(), seen.end(), r.compare_group) != seen.end()) continue;
        seen.push_back(r.compare_group);
        QString p = r.prompt;
        if (p.size() > 40) p = p.left(39) + QChar(0x2026);
        groups_->addItem(tr("#%1: %2").arg(r.compare_group).arg(p), r.compare_group);
    }
    if (groups_->count() == 0) groups_->addItem(tr("(none yet: use Compare in the prompt composer)"), 0);
    const int i = groups_->findData(group_);
    groups_->setCurrentIndex(i >= 0 ? i : 0);
}

void ComparisonView::showGroup(int compare_group) {
    group_ = compare_group;
    refreshGroups();
    rebuildColumns();
}

QString ComparisonView::titleOf(const RequestRecord& r) {
    return r.forked_from.isEmpty() ? r.adapterLabel() : tr("%1 · fork of %2").arg(r.adapterLabel(), r.forked_from);
}

int ComparisonView::columnCount() const { return columns_->count(); }
TokenStreamView* ComparisonView::columnView(int i) const { return columns_->at(i).view; }
QString ComparisonView::columnTitle(int i) const { return columns_->at(i).title->text(); }

void ComparisonView::rebuildColumns() {
    columns_->clear();
    for (Ticket t : model_->ticketsInGroup(group_)) {
        const RequestRecord* r = model_->record(t);
        if (!r) continue;
        auto& c = columns_->add(t, titleOf(*r), tr("Tokens from %1").arg(r->adapterLabel()));
        connect(c.view, &TokenStreamView::alternativeChosen, this,
                [this, t](int position, const TokenAlternative& choice) { Q_EMIT forkRequested(t, position, choice); });
    }
    const RequestRecord* first = columns_->count() ? model_->record(columns_->at(0).ticket) : nullptr;
    prompt_->setText(first ? tr("<b>Prompt:</b> %1").arg(first->prompt.toHtmlEscaped()) : QString());
    refresh();
}

void ComparisonView::refresh() {
    if (group_ == 0) {
        // Follow the newest comparison until the person picks one.
        int newest = 0;
        for (const auto& r : model_->records()) newest = qMax(newest, r.compare_group);
        if (newest) { showGroup(newest); return; }
    }
    if (columns_->columns().size() != model_->ticketsInGroup(group_).size()) { rebuildColumns(); return; }
    const RequestRecord* reference = nullptr;
    // The base model's own column (a fork of it is no reference: its tokens start elsewhere).
    for (const auto& c : columns_->columns())
        if (const RequestRecord* r = model_->record(c.ticket); r && r->adapter.isEmpty() && r->forked_from.isEmpty() && !reference)
            reference = r;
    if (!reference && columns_->count()) reference = model_->record(columns_->at(0).ticket);
    for (auto& c : columns_->columns()) {
        const RequestRecord* r = model_->record(c.ticket);
        if (!r) continue;
        const bool is_reference = r == reference;
        TokenColumns::setTitle(c, titleOf(*r));   // a fork learns its origin after its column exists
        c.view->setTokens(r->tokens, is_reference || !reference ? nullptr : &reference->tokens, size_t(r->fork_offset));
        QString stats = tr("%1 · %2 tokens").arg(statusLabel(r->status)).arg(r->generatedTokens());
        if (is_reference) stats += tr(" · reference");
        else stats += tr(" · %n differ", nullptr, c.view->differingTokens());
        if (!r->error.isEmpty()) stats += QStringLiteral(" · ") + r->error;
        c.stats->setText(stats);
    }
}

}  // namespace lorascope::ui
