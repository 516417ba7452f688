// Numbers as the window shows them to a person.
#pragma once

#include <QString>

namespace lorascope::ui {

// 1536 -> "1.5 KiB": binary units, one decimal above bytes.
QString humanBytes(qint64 bytes);

}  // namespace lorascope::ui
