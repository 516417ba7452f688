#include "chat/chat_view.h"

#include <algorithm>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTextEdit>
#include <QVBoxLayout>

#include "chat/chat_session.h"
#include "engine_link/engine_bridge.h"

namespace lorascope::ui {

namespace {

// The rendered prompt as HTML: special tokens bold on a tint, so that what the template added
// stands apart from what was written.
QString marked_prompt(const QString& prompt, const QStringList& specials) {
    QString html;
    int i = 0;
    while (i < prompt.size()) {
        int best = -1;
        QString token;
        for (const auto& s : specials) {
            const int at = prompt.indexOf(s, i);
            if (at >= 0 && (best < 0 || at < best || (at == best && s.size() > token.size()))) best = at, token = s;
        }
        const int end = best < 0 ? prompt.size() : best;
        html += prompt.mid(i, end - i).toHtmlEscaped();
        if (best < 0) break;
        html += QStringLiteral("<b style=\"background:#ffe9a8\">%1</b>").arg(token.toHtmlEscaped());
        i = best + token.size();
    }
    return QStringLiteral("<pre style=\"white-space:pre-wrap\">%1</pre>").arg(html);
}

// One target's pane: its transcript as wrapped text (a list view does not wrap a long answer
// without spaces), redrawn whenever the model changes and kept scrolled to the newest turn.
class TranscriptPane : public QTextEdit {
public:
    TranscriptPane(ChatTranscriptModel* model, QWidget* parent) : QTextEdit(parent), model_(model) {
        setReadOnly(true);
        setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        connect(model, &QAbstractItemModel::modelReset, this, &TranscriptPane::redraw);
        connect(model, &QAbstractItemModel::rowsInserted, this, &TranscriptPane::redraw);
        connect(model, &QAbstractItemModel::rowsRemoved, this, &TranscriptPane::redraw);
        connect(model, &QAbstractItemModel::dataChanged, this, &TranscriptPane::redraw);
        redraw();
    }

private:
    void redraw() {
        QString html;
        for (const auto& t : model_->turns()) {
            const bool user = t.role == QLatin1String("user");
            html += QStringLiteral("<p><b>%1</b> %2%3%4</p>")
                        .arg(user ? tr("You:") : tr("Assistant:"), t.text.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")),
                             t.streaming ? QStringLiteral(" \u2026") : QString(),
                             t.error.isEmpty() ? QString()
                                               : QStringLiteral("<br><span style=\"color:#b00020\">%1</span>")
                                                     .arg(tr("failed: %1").arg(t.error).toHtmlEscaped()));
        }
        setHtml(html);
        verticalScrollBar()->setValue(verticalScrollBar()->maximum());
    }
    ChatTranscriptModel* model_;
};

}  // namespace

ChatView::ChatView(EngineBridge* bridge, QWidget* parent) : QWidget(parent), bridge_(bridge) {
    session_ = new ChatSession(bridge, this);
    system_ = new QLineEdit(this);
    system_->setPlaceholderText(tr("System prompt (optional)"));
    targets_ = new QListWidget(this);
    targets_->setMaximumHeight(64);
    targets_->setToolTip(tr("Who answers: each checked target gets its own pane and history"));
    max_tokens_ = new QSpinBox(this);
    max_tokens_->setRange(1, 4096);
    max_tokens_->setValue(64);
    max_tokens_->setPrefix(tr("max new tokens "));
    panes_ = new QSplitter(Qt::Horizontal, this);
    input_ = new QPlainTextEdit(this);
    input_->setPlaceholderText(tr("Message"));
    input_->setMaximumHeight(70);
    send_ = new QPushButton(tr("&Send"), this);
    edit_last_ = new QPushButton(tr("&Edit last turn"), this);
    stop_ = new QPushButton(tr("S&top"), this);
    new_chat_ = new QPushButton(tr("&New conversation"), this);
    show_prompt_ = new QCheckBox(tr("Show the &prompt the model sees"), this);
    prompt_view_ = new QTextEdit(this);
    prompt_view_->setReadOnly(true);
    prompt_view_->setVisible(false);
    status_ = new QLabel(this);
    status_->setWordWrap(true);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("System:"), this));
    top->addWidget(system_, 1);
    top->addWidget(max_tokens_);
    auto* buttons = new QHBoxLayout;
    for (QWidget* w : {static_cast<QWidget*>(send_), static_cast<QWidget*>(edit_last_), static_cast<QWidget*>(stop_),
                       static_cast<QWidget*>(new_chat_), static_cast<QWidget*>(show_prompt_)})
        buttons->addWidget(w);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(targets_);
    layout->addWidget(panes_, 3);
    layout->addWidget(prompt_view_, 2);
    layout->addWidget(input_);
    layout->addLayout(buttons);
    layout->addWidget(status_);

    connect(send_, &QPushButton::clicked, this, &ChatView::on_send);
    connect(edit_last_, &QPushButton::clicked, this, &ChatView::on_edit_last);
    connect(stop_, &QPushButton::clicked, session_, &ChatSession::cancel);
    connect(new_chat_, &QPushButton::clicked, this, [this] {
        session_->clear();
        rebuild_panes();
    });
    connect(show_prompt_, &QCheckBox::toggled, this, [this](bool on) {
        prompt_view_->setVisible(on);
        refresh_prompt();
    });
    connect(system_, &QLineEdit::textChanged, session_, &ChatSession::setSystemPrompt);
    connect(system_, &QLineEdit::textChanged, this, &ChatView::refresh_prompt);
    connect(max_tokens_, &QSpinBox::valueChanged, session_, &ChatSession::setMaxNewTokens);
    connect(targets_, &QListWidget::itemChanged, this, &ChatView::apply_targets);
    connect(session_, &ChatSession::failed, status_, &QLabel::setText);
    connect(session_, &ChatSession::busyChanged, this, [this] {
        update_buttons();
        refresh_prompt();
    });
    for (auto signal : {&EngineBridge::loadFinished, &EngineBridge::adapterUnloaded})
        connect(bridge_, signal, this, &ChatView::refresh_targets);
    connect(bridge_, &EngineBridge::adapterLoaded, this, &ChatView::refresh_targets);
    session_->setMaxNewTokens(max_tokens_->value());
    refresh_targets();
}

void ChatView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    input_->setFocus();   // the tab opens ready to type; Alt+S sends
}

void ChatView::refresh_targets() {
    const QStringList checked = session_->targets();
    const QSignalBlocker block(targets_);
    targets_->clear();
    QStringList names{QString()};
    for (const auto& a : bridge_->adapters()) names << QString::fromStdString(a.name);
    for (const auto& name : names) {
        auto* item = new QListWidgetItem(name.isEmpty() ? tr("Base model") : name, targets_);
        item->setData(Qt::UserRole, name);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(name) ? Qt::Checked : Qt::Unchecked);
    }
    // Up to four targets whole in the font in use (a fixed 64 px cut the fourth under GNOME's
    // 11 pt font); more scroll.
    const int rows = std::min(targets_->count(), 4);
    if (rows > 0) targets_->setMaximumHeight(std::max(64, rows * targets_->sizeHintForRow(0) + 2 * targets_->frameWidth()));
    apply_targets();
}

void ChatView::apply_targets() {
    QStringList chosen;
    for (int i = 0; i < targets_->count(); ++i)
        if (targets_->item(i)->checkState() == Qt::Checked) chosen << targets_->item(i)->data(Qt::UserRole).toString();
    if (chosen != session_->targets()) session_->setTargets(chosen);
    rebuild_panes();
}

void ChatView::rebuild_panes() {
    while (panes_->count() > 0) delete panes_->widget(0);
    for (const auto& target : session_->targets()) {
        auto* pane = new QWidget(panes_);
        auto* layout = new QVBoxLayout(pane);
        layout->setContentsMargins(0, 0, 0, 0);
        auto* title = new QLabel(target.isEmpty() ? tr("Base model") : tr("Adapter %1").arg(target), pane);
        title->setStyleSheet(QStringLiteral("font-weight: bold"));
        auto* list = new TranscriptPane(session_->transcript(target), pane);
        list->setObjectName(QStringLiteral("chat-pane-") + (target.isEmpty() ? QStringLiteral("base") : target));
        layout->addWidget(title);
        layout->addWidget(list);
        panes_->addWidget(pane);
    }
    update_buttons();
    refresh_prompt();
}

void ChatView::on_send() {
    const QString text = input_->toPlainText();
    const bool ok = editing_last_ ? session_->resendLast(text) : session_->send(text);
    if (!ok) return;
    editing_last_ = false;
    input_->clear();
    status_->clear();
    update_buttons();
}

void ChatView::on_edit_last() {
    const auto targets = session_->targets();
    if (targets.isEmpty()) return;
    const QString last = session_->transcript(targets.first())->lastUserText();
    if (last.isEmpty()) return;
    input_->setPlainText(last);
    editing_last_ = true;
    status_->setText(tr("Editing the last turn: Send replaces it and asks again."));
    update_buttons();
}

void ChatView::refresh_prompt() {
    if (!prompt_view_->isVisible()) return;
    QString html;
    const QStringList specials = session_->specialTokens();
    for (const auto& target : session_->targets()) {
        QString error;
        const QString prompt = session_->renderedPrompt(target, &error);
        html += QStringLiteral("<h4>%1</h4>").arg(tr("%1: the prompt of its next answer")
                                                      .arg(target.isEmpty() ? tr("Base model") : target)
                                                      .toHtmlEscaped());
        html += error.isEmpty() ? marked_prompt(prompt, specials) : QStringLiteral("<p><i>%1</i></p>").arg(error.toHtmlEscaped());
    }
    prompt_view_->setHtml(html);
}

void ChatView::update_buttons() {
    const bool busy = session_->busy();
    send_->setText(editing_last_ ? tr("Re&send") : tr("&Send"));
    send_->setEnabled(!busy);
    edit_last_->setEnabled(!busy);
    stop_->setEnabled(busy);
}

}  // namespace lorascope::ui
