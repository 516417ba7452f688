// What a user does to the main window, done through its widgets, for the fake- and real-engine
// window tests alike.
#pragma once

#include <QSignalSpy>
#include <QString>
#include <QtTest>

#include <vector>

#include "engine_link/engine_bridge.h"
#include "shell/main_window.h"
#include "model/model_panel.h"
#include "requests/request_record.h"

namespace lorascope::test {

// Types the directory into the model panel, presses its Load button and waits for the load to
// finish (successfully or not); false on timeout.
inline bool load_through_panel(ui::MainWindow& w, const QString& dir, int timeout_ms) {
    QSignalSpy finished(w.bridge(), &ui::EngineBridge::loadFinished);
    w.modelPanel()->setModelDir(dir);
    QTest::mouseClick(w.modelPanel()->loadButton(), Qt::LeftButton);
    return finished.wait(timeout_ms);
}

// A finished request as the window holds it equals a reference run: its final text, the text its
// token deltas streamed, its token ids and its finish reason.
inline void check_finished_as(const ui::RequestRecord& r, const QString& text, const std::vector<int64_t>& token_ids,
                              const QString& finish_reason) {
    QString streamed;
    std::vector<int64_t> ids;
    for (const auto& t : r.tokens) {
        streamed += t.text;
        ids.push_back(t.token_id);
    }
    QCOMPARE(r.status, ui::RequestStatus::Finished);
    QCOMPARE(r.text, text);
    QCOMPARE(streamed, text);
    QCOMPARE(ids, token_ids);
    QCOMPARE(r.finish_reason, finish_reason);
}

}  // namespace lorascope::test
