// The lab's timeline of one run: engine steps across, batch rows down, each cell the request the
// step's StepStats put in that row (coloured per request, lighter where the row was prefilled),
// and above the rows a strip of the queue depth at each step, so waiting shows as well as work.
// Painted from an image of at most one column per pixel, so 500 requests x 5,000 steps cost the
// same as 50 x 50. Wheel zooms around the pointer, dragging pans, a double click fits the run;
// hovering names the request (id, adapter, prompt length, state) and a click selects it.
#pragma once

#include <QImage>
#include <QWidget>

#include "common/painted_text.h"
#include <cstdint>
#include <vector>

class QPainter;

namespace lorascope::ui {

class LabRunData;

class LabTimelineWidget : public QWidget, public PaintedTextSource {
    Q_OBJECT
public:
    explicit LabTimelineWidget(QWidget* parent = nullptr);
    void setRun(const LabRunData* run, const QString& title);
    void runChanged();             // new steps: repaint, follow the end while fitted
    void fit();
    void setSelected(int request_index);
    int selected() const { return selected_; }
    void zoom(double factor, int anchor_x);
    void panSteps(double steps);
    double firstStep() const { return first_step_; }
    double stepsPerPixel() const { return steps_per_px_; }
    // What lies under a point: the step index and row (row -1: the queue strip), or step -1.
    struct Hit { int step = -1; int row = -1; int request = -1; };
    Hit hitAt(const QPoint& pos) const;
    QString describeAt(const QPoint& pos) const;
    QSize sizeHint() const override { return {600, 200}; }
    QSize minimumSizeHint() const override;
    // The title and key, the queue's scale, row numbers and step numbers, as painted now.
    std::vector<PaintedText> paintedTexts() const override;

Q_SIGNALS:
    void requestClicked(int request_index);

protected:
    void paintEvent(QPaintEvent*) override;
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;

private:
    // The steps shown, [first, last), as `columns` image columns over `width` pixels from `x0`.
    struct Span {
        int first = 0, last = 0, columns = 0;
        double x0 = 0, width = 0;
    };
    Span visibleSpan() const;   // columns 0 when there is nothing to draw
    std::vector<PaintedText> key(int* bottom) const;
    std::vector<PaintedText> axisTexts(const Span& span) const;
    int64_t maxQueue(const Span& span) const;
    QImage renderCells(const Span& span, std::vector<int64_t>* queue_at) const;
    void drawCells(QPainter& p, const QRect& rows, const Span& span, const QImage& cells) const;
    void drawQueue(QPainter& p, const QRect& queue, const Span& span, const std::vector<int64_t>& queue_at,
                   int64_t max_queue) const;
    void drawTicks(QPainter& p, const QRect& rows, const Span& span) const;
    int tickEvery() const;
    QRect rowsRect() const;
    QRect queueRect() const;
    int leftGutter() const;   // the row numbers and "queue", left of the cells
    int axisHeight() const;   // the step numbers, below them
    int stepCount() const;
    void clampView();

    const LabRunData* run_ = nullptr;
    QString title_;
    double first_step_ = 0;
    double steps_per_px_ = 1.0 / 12;
    bool fitted_ = true;
    int selected_ = -1;
    QPoint press_pos_;
    double press_first_ = 0;
    bool dragging_ = false;
};

}  // namespace lorascope::ui
