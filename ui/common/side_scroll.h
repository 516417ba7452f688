// A page that scrolls sideways instead of widening the window: under GNOME's 11 pt font (the GTK
// theme) pages whose rows of controls asked their full width pushed the window past a 1280 px
// screen (test_ui_window_fit_fake_engine's theMinimumSizeFitsUnderGnomesFont names each page).
#pragma once

class QBoxLayout;
class QScrollArea;
class QWidget;

namespace lorascope::ui {

// `page` inside a frameless, resizable scroll area owned by `parent`.
QScrollArea* sideScrolling(QWidget* page, QWidget* parent);

// `columns` (the layout of `scroll`'s page) lays its items side by side while `scroll`'s viewport
// is wide enough for them and one above the other otherwise, so that a page whose columns do not
// fit scrolls down rather than sideways (the lab's setup page under GNOME's font cut policy B).
void stackWhenNarrow(QScrollArea* scroll, QBoxLayout* columns);

}  // namespace lorascope::ui
