#include "requests/request_board.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QTextCursor>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "common/column_fit.h"
#include "requests/alternatives_popup.h"
#include "requests/request_table_model.h"

namespace lorascope::ui {

RequestBoard::RequestBoard(RequestTableModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(buildButtons());
    auto* split = new QSplitter(Qt::Vertical, this);
    buildTable(split);
    detail_ = new QPlainTextEdit(split);
    detail_->setReadOnly(true);
    detail_->setAccessibleName(tr("Full output of the selected request"));
    detail_->setPlaceholderText(tr("Select a request to see its whole output; hover a token for its alternatives"));
    detail_->viewport()->setMouseTracking(true);
    detail_->viewport()->installEventFilter(this);
    popup_ = new AlternativesPopup(detail_);
    connect(popup_, &AlternativesPopup::alternativeChosen, this, [this](int position, const TokenAlternative& choice) {
        Q_EMIT forkRequested(popup_ticket_, position, choice);
    });
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    connect(cancel_, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(selectedTickets()); });
    connect(cancel_all_, &QPushButton::clicked, this, &RequestBoard::cancelAllRequested);
    connect(copy_, &QPushButton::clicked, this, &RequestBoard::copySelected);
    connect(clear_, &QPushButton::clicked, model_, &RequestTableModel::clearFinished);
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RequestBoard::refreshDetail);
    connect(model_, &QAbstractItemModel::dataChanged, this, [this] { refreshDetail(); refreshCounts(); });
    connect(model_, &QAbstractItemModel::rowsInserted, this, &RequestBoard::refreshCounts);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &RequestBoard::refreshCounts);
    refreshCounts();
}

QHBoxLayout* RequestBoard::buildButtons() {
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
    // One button for both formats: two took the room the counts need at 1280 px with every dock open.
    export_ = new QToolButton(this);
    export_->setText(tr("Export"));
    export_->setAccessibleName(tr("Export all results"));
    export_->setToolTip(tr("Export all results as JSON Lines or Markdown"));
    export_->setPopupMode(QToolButton::InstantPopup);
    auto* formats = new QMenu(export_);
    formats->addAction(tr("JSON Lines…"), this, [this] { Q_EMIT exportRequested(QStringLiteral("jsonl")); });
    formats->addAction(tr("Markdown…"), this, [this] { Q_EMIT exportRequested(QStringLiteral("md")); });
    export_->setMenu(formats);
    buttons->addWidget(export_);
    clear_ = button(tr("Clear done"), tr("Remove finished requests from the board"));
    clear_->setToolTip(tr("Remove finished requests from the board"));
    counts_ = new QLabel(this);
    counts_->setAccessibleName(tr("Request counts"));
    buttons->addWidget(counts_, 1);
    return buttons;
}

void RequestBoard::buildTable(QWidget* parent) {
    view_ = new QTableView(parent);
    view_->setModel(model_);
    view_->setAccessibleName(tr("Request board"));
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setWordWrap(false);
    view_->verticalHeader()->hide();
    view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
    view_->horizontalHeader()->setSectionResizeMode(RequestTableModel::ColOutput, QHeaderView::Stretch);
    // The prompt is a preview (the whole prompt is its tooltip); the other columns as wide as they hold.
    view_->setColumnWidth(RequestTableModel::ColPrompt, view_->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 16);
    new ColumnFitter(view_, {RequestTableModel::ColId, RequestTableModel::ColAdapter, RequestTableModel::ColStatus,
                             RequestTableModel::ColTokens, RequestTableModel::ColTokensPerSec, RequestTableModel::ColTtft,
                             RequestTableModel::ColFinish});
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

bool RequestBoard::showAlternativesAt(const QPoint& pos) {
    const auto tickets = selectedTickets();
    const RequestRecord* r = tickets.size() == 1 ? model_->record(tickets.front()) : nullptr;
    if (!r) return false;
    // The character under the point: the cursor position nearest to it, or the one before when
    // the point lies left of that position's caret.
    QTextCursor cursor = detail_->cursorForPosition(pos);
    int offset = cursor.position();
    if (offset > 0 && detail_->cursorRect(cursor).left() > pos.x()) --offset;
    const int token = r->tokenAtTextOffset(offset);
    if (token < 0 || r->tokens[size_t(token)].alternatives.empty()) return false;
    QTextCursor from = cursor;
    from.setPosition(offset);
    const QRect caret = detail_->cursorRect(from);
    popup_ticket_ = r->ticket;
    popup_->showToken(r->tokens[size_t(token)], token,
                      QRect(detail_->viewport()->mapToGlobal(caret.topLeft()), caret.size()));
    return true;
}

bool RequestBoard::eventFilter(QObject* watched, QEvent* e) {
    if (watched == detail_->viewport()) {
        if (e->type() == QEvent::ToolTip) {
            if (!showAlternativesAt(static_cast<QHelpEvent*>(e)->pos())) popup_->hide();
            return true;
        }
        if (e->type() == QEvent::Leave) popup_->hideSoon();
    }
    return QWidget::eventFilter(watched, e);
}

void RequestBoard::refreshCounts() {
    const int total = model_->rowCount();
    const int open = model_->unfinishedCount();
    counts_->setText(tr("%1 requests · %2 active").arg(total).arg(open));
    cancel_all_->setEnabled(open > 0);
}

}  // namespace lorascope::ui
