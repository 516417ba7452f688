// A tooltip that describes whatever lies under the pointer, for widgets that paint their own
// items (the batching timelines): the widget's event() hands ToolTip events here.
#pragma once

#include <QEvent>
#include <QHelpEvent>
#include <QString>
#include <QToolTip>
#include <QWidget>

namespace lorascope::ui {

// Shows describe(position) (an empty text hides the tooltip) and returns true for a ToolTip event;
// false for every other event, which the caller passes on to its base class.
template <typename Describe>
bool showToolTipFor(QWidget* widget, QEvent* e, Describe describe) {
    if (e->type() != QEvent::ToolTip) return false;
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = describe(help->pos());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(help->globalPos(), text, widget);
    return true;
}

}  // namespace lorascope::ui
