#include "common/chart_grid.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QFontMetrics>
#include <QGridLayout>
#include <QLegend>
#include <QRegularExpression>
#include <QValueAxis>

#include <algorithm>

namespace lorascope::ui {

namespace {
// Room Qt Charts keeps around the plot and between its parts (the layout's own margins, label
// padding, tick marks), measured as what makes the texts whole under both the default and GNOME's font.
constexpr int kSlack = 24;
constexpr int kAxisPadding = 12;   // an axis' tick marks and label padding

// A value axis' widest label: its format with four digits.
QString widestLabel(const QAbstractAxis* axis) {
    if (auto* v = qobject_cast<const QValueAxis*>(axis)) {
        QString f = v->labelFormat();
        f.replace(QRegularExpression(QStringLiteral("%[-+ #0-9.]*[a-zA-Z]")), QStringLiteral("8888"));
        return f.isEmpty() ? QStringLiteral("8888") : f;
    }
    return QStringLiteral("8888");
}
}  // namespace

QSize ChartGrid::chartMinimumSize(QChart* chart) {
    const QMargins m = chart->margins();
    int width = 0, height = 0;
    int plot_w = 0, plot_h = 0, left = 0, bottom = 0;
    for (QAbstractAxis* axis : chart->axes()) {
        const QFontMetrics labels(axis->labelsFont()), title(axis->titleFont());
        const bool titled = axis->isTitleVisible() && !axis->titleText().isEmpty();
        const int label_w = labels.horizontalAdvance(widestLabel(axis));
        if (axis->orientation() == Qt::Vertical) {
            left += label_w + kAxisPadding + (titled ? title.height() + 4 : 0);
            // The title runs along the plot's height; four labels stacked.
            plot_h = std::max({plot_h, 4 * labels.height(), titled ? title.horizontalAdvance(axis->titleText()) + 16 : 0});
        } else {
            bottom += labels.height() + kAxisPadding + (titled ? title.height() + 4 : 0);
            plot_w = std::max({plot_w, 3 * (label_w + 8), titled ? title.horizontalAdvance(axis->titleText()) + 8 : 0});
        }
    }
    const int title_h = chart->title().isEmpty() ? 0 : QFontMetrics(chart->titleFont()).height();
    const int title_w = chart->title().isEmpty() ? 0 : QFontMetrics(chart->titleFont()).horizontalAdvance(chart->title());
    int legend_h = 0;
    if (chart->legend()->isVisible()) legend_h = QFontMetrics(chart->legend()->font()).height() + 10;
    width = m.left() + m.right() + kSlack + std::max(title_w, left + plot_w);
    height = m.top() + m.bottom() + kSlack + title_h + plot_h + bottom + legend_h;
    return {width, height};
}

ChartGrid::ChartGrid(int max_columns, int min_height, QWidget* parent)
    : QWidget(parent), grid_(new QGridLayout(this)), max_columns_(std::max(1, max_columns)), min_height_(min_height) {
    grid_->setContentsMargins(0, 0, 0, 0);
    grid_->setSpacing(2);
}

void ChartGrid::addView(QChartView* view) {
    views_.push_back(view);
    columns_ = 0;   // lay out again
    relayout();
}

void ChartGrid::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    relayout();
}

void ChartGrid::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange || e->type() == QEvent::StyleChange) {
        columns_ = 0;
        relayout();
    }
}

void ChartGrid::relayout() {
    if (views_.empty()) return;
    QSize cell(0, min_height_);
    for (QChartView* v : views_) cell = cell.expandedTo(chartMinimumSize(v->chart()));
    const int spacing = grid_->spacing();
    const int fit = (width() + spacing) / (cell.width() + spacing);
    const int columns = std::clamp(fit, 1, std::min(max_columns_, int(views_.size())));
    if (columns == columns_ && cell == cell_) return;
    columns_ = columns;
    cell_ = cell;
    const int rows = (int(views_.size()) + columns - 1) / columns;
    for (QChartView* v : views_) grid_->removeWidget(v);
    for (size_t i = 0; i < views_.size(); ++i) {
        views_[i]->setMinimumHeight(cell.height());
        grid_->addWidget(views_[i], int(i) / columns, int(i) % columns);
    }
    for (int c = 0; c < max_columns_; ++c) grid_->setColumnStretch(c, c < columns ? 1 : 0);
    // One column's width at least (narrower, the page scrolls sideways); every row's height.
    setMinimumSize(cell.width(), rows * cell.height() + (rows - 1) * spacing);
}

}  // namespace lorascope::ui
