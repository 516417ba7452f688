// A page that scrolls sideways instead of widening the window: under GNOME's 11 pt font (the GTK
// theme) pages whose rows of controls asked their full width pushed the window past a 1280 px
// screen (test_ui_window_fit_fake_engine's theMinimumSizeFitsUnderGnomesFont names each page).
#pragma once

class QScrollArea;
class QWidget;

namespace lorascope::ui {

// `page` inside a frameless, resizable scroll area owned by `parent`.
QScrollArea* sideScrolling(QWidget* page, QWidget* parent);

}  // namespace lorascope::ui
