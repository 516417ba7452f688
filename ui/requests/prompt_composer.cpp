#include "requests/prompt_composer.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace lorascope::ui {

PromptComposer::PromptComposer(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* left = new QVBoxLayout;
    edit_ = new QPlainTextEdit(this);
    edit_->setAccessibleName(tr("Prompts"));
    edit_->setPlaceholderText(tr("Write a prompt (Ctrl+Enter submits). Choose \"one per line\" to send many at once."));
    left->addWidget(edit_, 1);
    auto* row = new QHBoxLayout;
    mode_ = new QComboBox(this);
    mode_->addItems({tr("One prompt"), tr("One prompt per line")});
    mode_->setAccessibleName(tr("Prompt mode"));
    load_ = new QPushButton(tr("Load prompts…"), this);
    load_->setAccessibleName(tr("Load prompts from a text or JSON Lines file"));
    file_note_ = new QLabel(this);
    submit_ = new QPushButton(tr("Submit"), this);
    submit_->setAccessibleName(tr("Submit prompts"));
    submit_->setToolTip(tr("Send every prompt to every checked target (Ctrl+Enter)"));
    compare_ = new QPushButton(tr("Compare"), this);
    compare_->setAccessibleName(tr("Compare the checked targets side by side"));
    compare_->setToolTip(tr("Send the first prompt to every checked target and show the columns side by side"));
    row->addWidget(mode_);
    row->addWidget(load_);
    row->addWidget(file_note_, 1);
    row->addWidget(compare_);
    row->addWidget(submit_);
    left->addLayout(row);
    layout->addLayout(left, 1);

    auto* right = new QVBoxLayout;
    auto* label = new QLabel(tr("Targets"), this);
    right->addWidget(label);
    targets_ = new QListWidget(this);
    targets_->setAccessibleName(tr("Targets: base model and adapters"));
    targets_->setMaximumWidth(170);
    label->setBuddy(targets_);
    right->addWidget(targets_, 1);
    layout->addLayout(right);
    setAdapters({});
    setSelectedTargets({QString()});

    connect(submit_, &QPushButton::clicked, this, &PromptComposer::submitRequested);
    connect(compare_, &QPushButton::clicked, this, &PromptComposer::compareRequested);
    connect(load_, &QPushButton::clicked, this, &PromptComposer::loadFileRequested);
    connect(edit_, &QPlainTextEdit::textChanged, this, [this] {
        if (!setting_text_ && !file_items_.empty()) {
            file_items_.clear();
            file_note_->setText(tr("(edited: file settings dropped)"));
        }
        updateButtons();
    });
    connect(targets_, &QListWidget::itemChanged, this, [this] { updateButtons(); });
    updateButtons();
}

void PromptComposer::setAdapters(const QStringList& names) {
    const QStringList checked = targets_->count() ? selectedTargets() : QStringList{QString()};
    targets_->clear();
    auto add = [this, &checked](const QString& label, const QString& name) {
        auto* item = new QListWidgetItem(label, targets_);
        item->setData(Qt::UserRole, name);
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(name) ? Qt::Checked : Qt::Unchecked);
    };
    add(tr("base model"), QString());
    for (const QString& n : names) add(n, n);
    updateButtons();
}

QStringList PromptComposer::selectedTargets() const {
    QStringList out;
    for (int i = 0; i < targets_->count(); ++i)
        if (targets_->item(i)->checkState() == Qt::Checked) out << targets_->item(i)->data(Qt::UserRole).toString();
    return out;
}

void PromptComposer::setSelectedTargets(const QStringList& targets) {
    for (int i = 0; i < targets_->count(); ++i) {
        QListWidgetItem* item = targets_->item(i);
        item->setCheckState(targets.contains(item->data(Qt::UserRole).toString()) ? Qt::Checked : Qt::Unchecked);
    }
    updateButtons();
}

void PromptComposer::setMode(Mode mode) { mode_->setCurrentIndex(int(mode)); }
PromptComposer::Mode PromptComposer::mode() const { return Mode(mode_->currentIndex()); }

void PromptComposer::setText(const QString& text) {
    setting_text_ = true;
    edit_->setPlainText(text);
    setting_text_ = false;
    file_items_.clear();
    file_note_->clear();
}
void PromptComposer::setPrompts(const QStringList& prompts) {
    setText(prompts.join(QLatin1Char('\n')));
    setMode(Mode::OnePerLine);
}

QString PromptComposer::text() const { return edit_->toPlainText(); }

std::vector<PromptItem> PromptComposer::prompts() const {
    if (!file_items_.empty()) return file_items_;
    if (mode() == Mode::OnePerLine) return promptsFromLines(text());
    const QString p = text().trimmed();
    if (p.isEmpty()) return {};
    return {PromptItem{QString(), p, std::nullopt, {}}};
}

void PromptComposer::loadFile(const QString& path) {
    std::vector<PromptItem> items = promptsFromFile(path);   // throws before anything changes
    QStringList lines;
    for (const auto& item : items) lines << QString(item.prompt).replace(QLatin1Char('\n'), QLatin1Char(' '));
    setting_text_ = true;
    edit_->setPlainText(lines.join(QLatin1Char('\n')));
    setting_text_ = false;
    setMode(Mode::OnePerLine);
    file_items_ = std::move(items);
    file_note_->setText(tr("%n prompt(s) from %1", nullptr, int(file_items_.size())).arg(QFileInfo(path).fileName()));
    updateButtons();
}

void PromptComposer::updateButtons() {
    const bool have_text = !edit_->toPlainText().trimmed().isEmpty() || !file_items_.empty();
    const int targets = int(selectedTargets().size());
    submit_->setEnabled(have_text && targets > 0);
    compare_->setEnabled(have_text && targets > 1);
}

}  // namespace lorascope::ui
