// What a user does to the main window, done through its widgets, for the fake- and real-engine
// window tests alike.
#pragma once

#include <QSignalSpy>
#include <QString>
#include <QtTest>

#include "engine_bridge.h"
#include "main_window.h"
#include "model_panel.h"

namespace lorascope::test {

// Types the directory into the model panel, presses its Load button and waits for the load to
// finish (successfully or not); false on timeout.
inline bool load_through_panel(ui::MainWindow& w, const QString& dir, int timeout_ms) {
    QSignalSpy finished(w.bridge(), &ui::EngineBridge::loadFinished);
    w.modelPanel()->setModelDir(dir);
    QTest::mouseClick(w.modelPanel()->loadButton(), Qt::LeftButton);
    return finished.wait(timeout_ms);
}

}  // namespace lorascope::test
