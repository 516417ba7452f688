// Engine steps across, batch rows down: each cell is the request a row held in that step,
// coloured by request or by adapter. Prefill cells (a request joining) are hatched, a request's
// last step has a dark right edge (leaving), and the strip under each step shows the share of
// computed positions that were padding.
#pragma once

#include <QWidget>

#include "engine_link/bridge_events.h"

namespace lorascope::ui {

class StepStatsModel;

class BatchTimelineWidget : public QWidget {
    Q_OBJECT
public:
    enum class ColourBy { Request, Adapter };
    explicit BatchTimelineWidget(StepStatsModel* model, QWidget* parent = nullptr);
    void setColourBy(ColourBy mode);
    ColourBy colourBy() const { return colour_by_; }
    static QColor colourFor(Ticket ticket);
    static QColor colourFor(const QString& adapter);
    // What the cell under a point holds, for the tooltip; empty outside cells.
    QString describeAt(const QPoint& pos) const;
    QSize sizeHint() const override { return {600, 220}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

protected:
    void paintEvent(QPaintEvent*) override;
    bool event(QEvent* e) override;

private:
    struct Geometry {
        int first_sample = 0, steps = 0, rows = 0;
        int cell_w = 8, cell_h = 12, left = 34, top = 22, pad_strip = 8;
    };
    Geometry geometry() const;
    StepStatsModel* model_;
    ColourBy colour_by_ = ColourBy::Request;
};

}  // namespace lorascope::ui
