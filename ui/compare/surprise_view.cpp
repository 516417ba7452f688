#include "compare/surprise_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "compare/token_columns.h"
#include "compare/token_stream_view.h"
#include "engine_link/engine_bridge.h"
#include "requests/request_table_model.h"

namespace lorascope::ui {

namespace {
// The prompt tokens a column shows: a token without a logprob (a prompt's first) as special, so
// that it is drawn unshaded and greyed.
std::vector<StreamedToken> shadedTokens(const std::vector<PromptTokenLogprob>& scored) {
    std::vector<StreamedToken> out;
    for (const auto& t : scored)
        out.push_back({t.token_id, QString::fromStdString(t.text), t.logprob.value_or(0.0f), !t.logprob.has_value(), {}});
    return out;
}
}  // namespace

SurpriseView::SurpriseView(RequestTableModel* model, EngineBridge* bridge, QWidget* parent)
    : QWidget(parent), model_(model), bridge_(bridge) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QGridLayout;
    text_ = new QLineEdit(this);
    text_->setAccessibleName(tr("Text to score"));
    // Short placeholders, the whole sentence in the tooltip: the long ones were cut at 1280 px
    // under GNOME's 11 pt font.
    text_->setPlaceholderText(tr("A prompt (decoder-only) or a target (encoder-decoder)"));
    text_->setToolTip(tr("The text to score: a prompt (decoder-only), the target (encoder-decoder)"));
    source_ = new QLineEdit(this);
    source_->setAccessibleName(tr("Source of the target"));
    source_->setPlaceholderText(tr("Encoder-decoder models: the source"));
    source_->setToolTip(tr("Encoder-decoder models: the source the target is scored given"));
    score_ = new QPushButton(tr("Score"), this);
    score_->setAccessibleName(tr("Score the text under the checked targets"));
    score_->setToolTip(tr("Score the text under the targets checked in the prompt composer"));
    auto* text_label = new QLabel(tr("Text"), this);
    text_label->setBuddy(text_);
    auto* source_label = new QLabel(tr("Source"), this);
    source_label->setBuddy(source_);
    form->addWidget(text_label, 0, 0);
    form->addWidget(text_, 0, 1);
    form->addWidget(score_, 0, 2);
    form->addWidget(source_label, 1, 0);
    form->addWidget(source_, 1, 1);
    layout->addLayout(form);
    legend_ = tr("Each token shaded by its log-probability under each target: deeper = more surprising (full from %1)")
                  .arg(double(TokenStreamView::kSurpriseFloor), 0, 'f', 0);
    status_ = new QLabel(legend_, this);
    status_->setWordWrap(true);
    layout->addWidget(status_);
    columns_ = new TokenColumns(tr("Surprise columns"), this);
    layout->addWidget(columns_, 1);
    connect(score_, &QPushButton::clicked, this, [this] { score(); });
    connect(text_, &QLineEdit::returnPressed, this, [this] { score(); });
    connect(model_, &QAbstractItemModel::dataChanged, this, &SurpriseView::refresh);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &SurpriseView::modelChanged);
    connect(model_, &QAbstractItemModel::modelReset, this, &SurpriseView::modelChanged);
}

std::vector<Ticket> SurpriseView::score() {
    const QStringList targets = targets_ ? targets_() : QStringList{QString()};
    const QString text = text_->text();
    if (!bridge_->hasEngine() || text.trimmed().isEmpty() || targets.isEmpty()) {
        status_->setText(!bridge_->hasEngine() ? tr("Load a model first.")
                         : targets.isEmpty()   ? tr("Check the base model and/or adapters in the prompt composer.")
                                               : tr("Type a text to score."));
        return {};
    }
    const bool encoder_decoder = bridge_->modelConfig()->is_encoder_decoder();
    if (encoder_decoder && source_->text().trimmed().isEmpty()) {
        status_->setText(tr("An encoder-decoder model scores the text as a target: give its source too."));
        return {};
    }
    std::vector<Ticket> tickets;
    bridge_->holdSubmissions(true);
    for (const QString& target : targets) {
        Request r;
        r.adapter = target.toStdString();
        r.params.prompt_logprobs = true;
        r.params.max_new_tokens = 1;   // the scores come with the prefill; one token is the least a request makes
        r.params.logprobs = false;
        if (encoder_decoder) {
            r.prompt = source_->text().toStdString();
            r.target = text.toStdString();
        } else {
            r.prompt = text.toStdString();
        }
        if (const Ticket t = bridge_->submit(std::move(r))) tickets.push_back(t);
    }
    bridge_->holdSubmissions(false);
    status_->setText(tr("Scoring under %n target(s)…", nullptr, int(tickets.size())));
    rebuildColumns(tickets);
    return tickets;
}

int SurpriseView::columnCount() const { return columns_->count(); }
TokenStreamView* SurpriseView::columnView(int i) const { return columns_->at(i).view; }
QString SurpriseView::columnTitle(int i) const { return columns_->at(i).title->text(); }
QString SurpriseView::columnStats(int i) const { return columns_->at(i).stats->text(); }

void SurpriseView::rebuildColumns(const std::vector<Ticket>& tickets) {
    columns_->clear();
    for (Ticket t : tickets) {
        const RequestRecord* r = model_->record(t);
        if (!r) continue;
        columns_->add(t, r->adapterLabel(), tr("Scored tokens under %1").arg(r->adapterLabel())).view->setSurpriseShading(true);
    }
    refresh();
}

void SurpriseView::modelChanged() {
    std::vector<Ticket> left;
    for (const auto& c : columns_->columns())
        if (model_->record(c.ticket)) left.push_back(c.ticket);
    if (left.size() != columns_->columns().size()) rebuildColumns(left);
}

void SurpriseView::refresh() {
    bool all_finished = true;
    for (auto& c : columns_->columns()) {
        const RequestRecord* r = model_->record(c.ticket);
        if (!r) continue;
        all_finished = all_finished && r->finished();
        c.view->setTokens(shadedTokens(r->prompt_logprobs), nullptr);
        double sum = 0;
        int scored = 0;
        for (const auto& t : r->prompt_logprobs)
            if (t.logprob) {
                sum += double(*t.logprob);
                ++scored;
            }
        if (!r->error.isEmpty()) c.stats->setText(r->error);
        else if (!r->finished()) c.stats->setText(statusLabel(r->status));
        else c.stats->setText(tr("%1 tokens · sum %2 · mean %3")
                                  .arg(scored)
                                  .arg(sum, 0, 'f', 2)
                                  .arg(scored ? sum / scored : 0.0, 0, 'f', 3));
    }
    if (all_finished && columns_->count()) status_->setText(legend_);
}

}  // namespace lorascope::ui
