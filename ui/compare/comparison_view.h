// Side-by-side adapter comparison: one prompt fanned out to adapters (and the base), one column
// per request, all streaming together; differences to the reference column highlighted.
#pragma once

#include <QWidget>
#include <vector>

#include "engine_link/bridge_events.h"

class QComboBox;
class QHBoxLayout;
class QLabel;
class QTabWidget;

namespace lorascope::ui {

class RequestTableModel;
class TokenColumns;
class TokenStreamView;

class ComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonView(RequestTableModel* model, QWidget* parent = nullptr);
    void showGroup(int compare_group);
    int currentGroup() const { return group_; }
    int columnCount() const;
    TokenStreamView* columnView(int i) const;
    QString columnTitle(int i) const;
    // More pages beside the generations (the surprise view): the compare area's sub-tabs.
    void addPage(QWidget* page, const QString& title);
    void showPage(QWidget* page);
    void showGenerations();

public Q_SLOTS:
    void refresh();

Q_SIGNALS:
    // An alternative clicked in a column's popup: fork that column's request at `position`.
    void forkRequested(lorascope::ui::Ticket ticket, int position, const lorascope::TokenAlternative& choice);

protected:
    void changeEvent(QEvent* e) override;

private:
    void rebuildColumns();
    void refreshLegend();
    void refreshGroups();
    RequestTableModel* model_;
    QTabWidget* pages_ = nullptr;
    QComboBox* groups_ = nullptr;
    QLabel* prompt_ = nullptr;
    QLabel* legend_ = nullptr;
    TokenColumns* columns_ = nullptr;
    int group_ = 0;
};

}  // namespace lorascope::ui
