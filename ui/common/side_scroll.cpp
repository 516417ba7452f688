#include "common/side_scroll.h"

#include <algorithm>

#include <QBoxLayout>
#include <QEvent>
#include <QScrollArea>

namespace lorascope::ui {

QScrollArea* sideScrolling(QWidget* page, QWidget* parent) {
    auto* scroll = new QScrollArea(parent);
    scroll->setWidget(page);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    return scroll;
}

namespace {

// Watches the viewport's width; the page's own width cannot tell, as the scroll area never makes it
// narrower than the side-by-side minimum.
class StackWhenNarrow : public QObject {
public:
    StackWhenNarrow(QScrollArea* scroll, QBoxLayout* columns) : QObject(scroll), scroll_(scroll), columns_(columns) {
        scroll->viewport()->installEventFilter(this);
    }

    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == scroll_->viewport() && (event->type() == QEvent::Resize || event->type() == QEvent::Show)) reflow();
        return false;
    }

private:
    // The width the items ask for side by side, whatever the layout's direction now.
    int sideBySideWidth() const {
        const QMargins m = columns_->contentsMargins();
        int width = m.left() + m.right();
        int shown = 0;
        for (int i = 0; i < columns_->count(); ++i) {
            QLayoutItem* item = columns_->itemAt(i);
            if (item->isEmpty()) continue;
            width += item->minimumSize().width();
            ++shown;
        }
        return width + std::max(0, shown - 1) * std::max(0, columns_->spacing());
    }

    void reflow() {
        const auto want = scroll_->viewport()->width() >= sideBySideWidth() ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
        if (columns_->direction() != want) columns_->setDirection(want);
    }

    QScrollArea* scroll_;
    QBoxLayout* columns_;
};

}  // namespace

void stackWhenNarrow(QScrollArea* scroll, QBoxLayout* columns) { new StackWhenNarrow(scroll, columns); }

}  // namespace lorascope::ui
