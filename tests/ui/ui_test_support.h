// Small helpers shared by the UI tests: on-disk stand-ins the fake engine accepts.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>

namespace lorascope::test {

inline QString makeFakeModelDir(const QString& parent, const QString& name) {
    QDir(parent).mkpath(name);
    const QString dir = QDir(parent).filePath(name);
    QFile f(QDir(dir).filePath(QStringLiteral("config.json")));
    f.open(QIODevice::WriteOnly);
    f.write("{\"model_type\": \"t5\"}\n");
    return dir;
}

inline QString makeFakeAdapterDir(const QString& parent, const QString& name) {
    QDir(parent).mkpath(name);
    const QString dir = QDir(parent).filePath(name);
    QFile f(QDir(dir).filePath(QStringLiteral("adapter_config.json")));
    f.open(QIODevice::WriteOnly);
    f.write("{\"r\": 8}\n");
    return dir;
}

}  // namespace lorascope::test
