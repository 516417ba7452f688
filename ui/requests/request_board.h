// The request board: every request's row, the selected one's full text, cancel/copy/export.
#pragma once

#include <QWidget>
#include <vector>

#include "engine_link/bridge_events.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace lorascope::ui {

class RequestTableModel;

class RequestBoard : public QWidget {
    Q_OBJECT
public:
    explicit RequestBoard(RequestTableModel* model, QWidget* parent = nullptr);
    std::vector<Ticket> selectedTickets() const;
    QTableView* view() const { return view_; }
    QString selectedText() const;
    void copySelected() const;

Q_SIGNALS:
    void cancelRequested(const std::vector<lorascope::ui::Ticket>& tickets);
    void cancelAllRequested();
    void exportRequested(const QString& format);   // "jsonl" or "md"

private:
    void refreshDetail();
    void refreshCounts();
    RequestTableModel* model_;
    QTableView* view_ = nullptr;
    QPlainTextEdit* detail_ = nullptr;
    QLabel* counts_ = nullptr;
    QPushButton *cancel_ = nullptr, *cancel_all_ = nullptr, *copy_ = nullptr, *export_jsonl_ = nullptr,
                *export_md_ = nullptr, *clear_ = nullptr;
};

}  // namespace lorascope::ui
