// Table columns as wide as what they hold: a fitted column grows to the widest text its header
// and its rows have shown (ids past 999, "cancelled"), measured on the rows that changed only, so
// a board of thousands of rows pays per change, not per row; a model reset fits it anew.
#pragma once

#include <QObject>
#include <vector>

class QModelIndex;
class QTableView;

namespace lorascope::ui {

class ColumnFitter : public QObject {
public:
    // Fits `columns` of `view` (whose model must be set) from now on.
    ColumnFitter(QTableView* view, std::vector<int> columns);
    // The width column `column` needs for its header and rows [first, last].
    int neededWidth(int column, int first, int last) const;

private:
    void fitRows(int first, int last, bool may_shrink);
    QTableView* view_;
    std::vector<int> columns_;
};

}  // namespace lorascope::ui
