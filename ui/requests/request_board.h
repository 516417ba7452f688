// The request board: every request's row, the selected one's full text (hover a token there for
// its alternatives, click one to fork), cancel/copy/export.
#pragma once

#include <QWidget>
#include <vector>

#include "engine_link/bridge_events.h"

class QHBoxLayout;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;
class QToolButton;

namespace lorascope::ui {

class AlternativesPopup;
class RequestTableModel;

class RequestBoard : public QWidget {
    Q_OBJECT
public:
    explicit RequestBoard(RequestTableModel* model, QWidget* parent = nullptr);
    std::vector<Ticket> selectedTickets() const;
    QTableView* view() const { return view_; }
    QString selectedText() const;
    void copySelected() const;
    QPlainTextEdit* detailView() const { return detail_; }
    // Shows the alternatives of the selected request's token under `pos` (the detail pane's
    // viewport coordinates), as hovering there does; false when that token has none.
    bool showAlternativesAt(const QPoint& pos);
    AlternativesPopup* alternativesPopup() const { return popup_; }

Q_SIGNALS:
    void cancelRequested(const std::vector<lorascope::ui::Ticket>& tickets);
    void cancelAllRequested();
    void exportRequested(const QString& format);   // "jsonl" or "md"
    // An alternative clicked in the detail pane's popup: fork that request at `position`.
    void forkRequested(lorascope::ui::Ticket ticket, int position, const lorascope::TokenAlternative& choice);

protected:
    bool eventFilter(QObject* watched, QEvent* e) override;

private:
    QHBoxLayout* buildButtons();
    void buildTable(QWidget* parent);
    void refreshDetail();
    void refreshCounts();
    RequestTableModel* model_;
    QTableView* view_ = nullptr;
    QPlainTextEdit* detail_ = nullptr;
    QLabel* counts_ = nullptr;
    QPushButton *cancel_ = nullptr, *cancel_all_ = nullptr, *copy_ = nullptr, *clear_ = nullptr;
    QToolButton* export_ = nullptr;
    AlternativesPopup* popup_ = nullptr;
    Ticket popup_ticket_ = 0;
};

}  // namespace lorascope::ui
