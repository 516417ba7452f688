// Where tests find oracle outputs, shared tokenizer files and test data (set by CTest).
#pragma once

#include <QtGlobal>
#include <QString>
#include <QDir>
#include <QFileInfo>
#include <string>

namespace lorascope::test {

inline std::string env_path(const char* name) {
    const QByteArray value = qgetenv(name);
    return value.isEmpty() ? std::string() : value.toStdString();
}
inline std::string oracle_dir() { return env_path("LORASCOPE_ORACLE_DIR"); }
inline std::string shared_tokenizers() { return env_path("LORASCOPE_SHARED_TOKENIZERS"); }
inline std::string shared_chat_templates() { return env_path("LORASCOPE_SHARED_CHAT_TEMPLATES"); }
inline std::string test_data() { return env_path("LORASCOPE_TEST_DATA"); }
inline std::string cli_path() { return env_path("LORASCOPE_CLI"); }
inline bool exists(const std::string& path) { return QFileInfo::exists(QString::fromStdString(path)); }

}  // namespace lorascope::test
