#include "shell/error_reporter.h"

#include <QMessageBox>

namespace lorascope::ui {

void DialogErrorReporter::report(QWidget* parent, const QString& title, const QString& message) {
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, parent);
    box->setObjectName(QLatin1String(kObjectName));
    box->setAccessibleName(title);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->open();   // window-modal, returns at once
}

}  // namespace lorascope::ui
