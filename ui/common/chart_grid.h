// The small charts of a page in a grid that reflows: each chart at least as large as its title,
// axis labels and axis titles need in the fonts in use (Qt Charts elides with "..." what its room
// cannot hold), as many columns across as fit, up to a given number, and the grid scrolling down
// when the rows do not fit the page's height. With fixed columns and pixel heights, GNOME's 11 pt
// font (Qt's GTK 3 platform theme) left the lab's tick labels and axis titles as "...".
#pragma once

#include <QWidget>

#include <vector>

class QChart;
class QChartView;
class QGridLayout;

namespace lorascope::ui {

class ChartGrid : public QWidget {
public:
    ChartGrid(int max_columns, int min_height, QWidget* parent = nullptr);
    void addView(QChartView* view);
    int columns() const { return columns_; }

    // The least room `chart` draws every text of in whole: width and height.
    static QSize chartMinimumSize(QChart* chart);

protected:
    void resizeEvent(QResizeEvent* e) override;
    void changeEvent(QEvent* e) override;

private:
    void relayout();
    QGridLayout* grid_;
    std::vector<QChartView*> views_;
    int max_columns_;
    int min_height_;
    int columns_ = 0;
    QSize cell_;
};

}  // namespace lorascope::ui
