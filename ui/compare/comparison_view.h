// Side-by-side adapter comparison: one prompt fanned out to adapters (and the base), one column
// per request, all streaming together; differences to the reference column highlighted.
#pragma once

#include <QWidget>
#include <vector>

#include "engine_link/bridge_events.h"

class QComboBox;
class QHBoxLayout;
class QLabel;

namespace lorascope::ui {

class RequestTableModel;
class TokenStreamView;

class ComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonView(RequestTableModel* model, QWidget* parent = nullptr);
    void showGroup(int compare_group);
    int currentGroup() const { return group_; }
    int columnCount() const { return int(columns_.size()); }
    TokenStreamView* columnView(int i) const { return columns_.at(size_t(i)).view; }
    QString columnTitle(int i) const;

public Q_SLOTS:
    void refresh();

Q_SIGNALS:
    // An alternative clicked in a column's popup: fork that column's request at `position`.
    void forkRequested(lorascope::ui::Ticket ticket, int position, const lorascope::TokenAlternative& choice);

protected:
    void changeEvent(QEvent* e) override;

private:
    struct Column {
        Ticket ticket;
        QWidget* frame;
        QLabel* title;
        QLabel* stats;
        TokenStreamView* view;
    };
    void rebuildColumns();
    void refreshLegend();
    void refreshGroups();
    RequestTableModel* model_;
    QComboBox* groups_ = nullptr;
    QLabel* prompt_ = nullptr;
    QLabel* legend_ = nullptr;
    QWidget* columns_host_ = nullptr;
    QHBoxLayout* columns_layout_ = nullptr;
    std::vector<Column> columns_;
    int group_ = 0;
};

}  // namespace lorascope::ui
