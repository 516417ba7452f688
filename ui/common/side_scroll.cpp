#include "common/side_scroll.h"

#include <QScrollArea>

namespace lorascope::ui {

QScrollArea* sideScrolling(QWidget* page, QWidget* parent) {
    auto* scroll = new QScrollArea(parent);
    scroll->setWidget(page);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    return scroll;
}

}  // namespace lorascope::ui
