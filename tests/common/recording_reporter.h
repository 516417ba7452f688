// An ErrorReporter for window tests: records what would have been a dialog ("title: message"),
// so that a test can require that none appeared.
#pragma once

#include <QString>
#include <QStringList>

#include "shell/error_reporter.h"

namespace lorascope::test {

class RecordingReporter : public ui::ErrorReporter {
public:
    void report(QWidget*, const QString& title, const QString& message) override { reports << title + ": " + message; }
    QStringList reports;
};

}  // namespace lorascope::test
