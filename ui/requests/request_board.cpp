#include "requests/request_board.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "requests/request_table_model.h"

namespace lorascope::ui {

RequestBoard::RequestBoard(RequestTableModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    auto button = [this, buttons](const QString& text, const QString& accessible) {
        auto* b = new QPushButton(text, this);
        b->setAccessibleName(accessible);
        buttons->addWidget(b);
        return b;
    };
    cancel_ = button(tr("Cancel"), tr("Cancel the selected requests"));
    cancel_->setToolTip(tr("Cancel the selected requests (Esc)"));
    cancel_all_ = button(tr("Cancel all"), tr("Cancel all requests"));
    copy_ = button(tr("Copy"), tr("Copy the selected outputs"));
    export_jsonl_ = button(tr("JSONL…"), tr("Export all results as JSON Lines"));
    export_md_ = button(tr("Markdown…"), tr("Export all results as Markdown"));
    clear_ = button(tr("Clear done"), tr("Remove finished requests from the board"));
    counts_ = new QLabel(this);
    counts_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);   // never widens the window
    export_jsonl_->setToolTip(tr("Export all results as JSON Lines"));
    export_md_->setToolTip(tr("Export all results as Markdown"));
    clear_->setToolTip(tr("Remove finished requests from the board"));
    buttons->addWidget(counts_, 1);
    layout->addLayout(buttons);

    auto* split = new QSplitter(Qt::Vertical, this);
    view_ = new QTableView(split);
    view_->setModel(model_);
    view_->setAccessibleName(tr("Request board"));
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setWordWrap(false);
    view_->verticalHeader()->hide();
    view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
    auto* header = view_->horizontalHeader();
    header->setSectionResizeMode(RequestTableModel::ColOutput, QHeaderView::Stretch);
    view_->setColumnWidth(RequestTableModel::ColId, 34);
    view_->setColumnWidth(RequestTableModel::ColAdapter, 70);
    view_->setColumnWidth(RequestTableModel::ColStatus, 64);
    view_->setColumnWidth(RequestTableModel::ColPrompt, 110);
    view_->setColumnWidth(RequestTableModel::ColTokens, 52);
    view_->setColumnWidth(RequestTableModel::ColTokensPerSec, 48);
    view_->setColumnWidth(RequestTableModel::ColTtft, 60);
    view_->setColumnWidth(RequestTableModel::ColFinish, 58);
    detail_ = new QPlainTextEdit(split);
    detail_->setReadOnly(true);
    detail_->setAccessibleName(tr("Full output of the selected request"));
    detail_->setPlaceholderText(tr("Select a request to see its whole output"));
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    connect(cancel_, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(selectedTickets()); });
    connect(cancel_all_, &QPushButton::clicked, this, &RequestBoard::cancelAllRequested);
    connect(copy_, &QPushButton::clicked, this, &RequestBoard::copySelected);
    connect(export_jsonl_, &QPushButton::clicked, this, [this] { Q_EMIT exportRequested(QStringLiteral("jsonl")); });
    connect(export_md_, &QPushButton::clicked, this, [this] { Q_EMIT exportRequested(QStringLiteral("md")); });
    connect(clear_, &QPushButton::clicked, model_, &RequestTableModel::clearFinished);
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RequestBoard::refreshDetail);
    connect(model_, &QAbstractItemModel::dataChanged, this, [this] { refreshDetail(); refreshCounts(); });
    connect(model_, &QAbstractItemModel::rowsInserted, this, &RequestBoard::refreshCounts);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &RequestBoard::refreshCounts);
    refreshCounts();
}

std::vector<Ticket> RequestBoard::selectedTickets() const {
    std::vector<Ticket> out;
    for (const QModelIndex& index : view_->selectionModel()->selectedRows())
        out.push_back(index.data(RequestTableModel::TicketRole).toULongLong());
    return out;
}

QString RequestBoard::selectedText() const {
    QStringList texts;
    for (Ticket t : selectedTickets())
        if (const RequestRecord* r = model_->record(t)) texts << r->text;
    return texts.join(QStringLiteral("\n\n"));
}

void RequestBoard::copySelected() const {
    if (QClipboard* clip = QApplication::clipboard()) clip->setText(selectedText());
}

void RequestBoard::refreshDetail() {
    const auto tickets = selectedTickets();
    const RequestRecord* r = tickets.size() == 1 ? model_->record(tickets.front()) : nullptr;
    const QString text = r ? r->detailText() : QString();
    if (detail_->toPlainText() != text) detail_->setPlainText(text);
}

void RequestBoard::refreshCounts() {
    const int total = model_->rowCount();
    const int open = model_->unfinishedCount();
    counts_->setText(tr("%1 requests, %2 running or queued").arg(total).arg(open));
    cancel_all_->setEnabled(open > 0);
}

}  // namespace lorascope::ui
