#include "common/column_fit.h"

#include <QHeaderView>
#include <QStyle>
#include <QStyledItemDelegate>
#include <QTableView>

#include <algorithm>
#include <array>
#include <limits>
#include <cmath>

namespace lorascope::ui {

ColumnFitter::ColumnFitter(QTableView* view, std::vector<int> columns)
    : QObject(view), view_(view), columns_(std::move(columns)) {
    QAbstractItemModel* model = view->model();
    connect(model, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex& parent, int first, int last) {
        if (!parent.isValid()) fitRows(first, last, false);
    });
    connect(model, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex& top, const QModelIndex& bottom) {
        fitRows(top.row(), bottom.row(), false);
    });
    connect(model, &QAbstractItemModel::modelReset, this, [this] {
        fitRows(0, view_->model()->rowCount() - 1, true);
    });
    fitRows(0, model->rowCount() - 1, true);
}

int ColumnFitter::neededWidth(int column, int first, int last) const {
    const QAbstractItemModel* model = view_->model();
    QStyle* style = view_->style();
    const int header_margin = 2 * style->pixelMetric(QStyle::PM_HeaderMargin, nullptr, view_->horizontalHeader());
    // The item delegate's text margin on each side (QCommonStyle: the focus frame's, plus one), and
    // the grid line the cell gives up.
    const int cell_margin = 2 * (style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view_) + 1) + (view_->showGrid() ? 1 : 0);
    const QFontMetrics header_fm(view_->horizontalHeader()->font());
    int needed = 0;
    for (const QString& line : model->headerData(column, Qt::Horizontal).toString().split(QLatin1Char('\n')))
        needed = std::max(needed, header_fm.horizontalAdvance(line) + header_margin);
    const QFontMetricsF fm(view_->font());
    // Shaping a text costs ~3.5 us; a table of 500 rows x 11 columns took 25 ms of GUI time to fit.
    // A text whose characters' advances add up to no more than the width already needed cannot
    // widen the column (kerning only narrows Latin text; the margin covers rounding), so only the
    // texts that might are shaped. The advances of ASCII characters are looked up once a call.
    std::array<qreal, 128> advance{};
    for (int c = 32; c < 127; ++c) advance[size_t(c)] = fm.horizontalAdvance(QChar(c));
    auto upper_bound = [&](const QString& text) -> qreal {
        qreal sum = 0;
        for (QChar c : text) {
            if (c.unicode() < 32 || c.unicode() >= 127) return std::numeric_limits<qreal>::infinity();
            sum += advance[c.unicode()];
        }
        return sum;
    };
    for (int row = std::max(0, first); row <= last && row < model->rowCount(); ++row) {
        const QModelIndex index = model->index(row, column);
        const QVariant value = index.data(Qt::DisplayRole);
        auto* delegate = qobject_cast<QStyledItemDelegate*>(view_->itemDelegateForIndex(index));
        const QString text = delegate ? delegate->displayText(value, view_->locale()) : value.toString();
        if (text.isEmpty() || upper_bound(text) + cell_margin + 1 <= needed) continue;
        needed = std::max(needed, int(std::ceil(fm.horizontalAdvance(text))) + cell_margin);
    }
    return needed;
}

void ColumnFitter::fitRows(int first, int last, bool may_shrink) {
    for (int column : columns_) {
        const int needed = neededWidth(column, first, last);
        const int now = view_->columnWidth(column);
        if (needed > now || (may_shrink && needed != now)) view_->setColumnWidth(column, needed);
    }
}

}  // namespace lorascope::ui
