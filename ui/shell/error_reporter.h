// How the window tells a person something went wrong. The default shows a non-blocking
// QMessageBox (so the event loop, and any test driving it, keeps running); tests may inject
// a recorder instead.
#pragma once

#include <QString>

class QWidget;

namespace lorascope::ui {

class ErrorReporter {
public:
    virtual ~ErrorReporter() = default;
    virtual void report(QWidget* parent, const QString& title, const QString& message) = 0;
};

class DialogErrorReporter : public ErrorReporter {
public:
    // The dialog's objectName, so tests and accessibility tools can find it.
    static constexpr const char* kObjectName = "lorascopeErrorDialog";
    void report(QWidget* parent, const QString& title, const QString& message) override;
};

}  // namespace lorascope::ui
