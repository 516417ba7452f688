// Shared by the end-to-end GUI tests: the oracle's manifests (tiny T5 + two PEFT adapters; the demo
// pack's Llama + two of its adapters) and running lorascope-cli / lorascope as child processes.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <vector>

#include "test_env.h"

namespace lorascope::test {

struct E2eAdapter {
    QString name, dir;
};

struct E2eManifest {
    QString model;
    std::vector<E2eAdapter> adapters;
    QJsonArray prompts;   // {id, prompt, adapter, input_ids, hf_greedy_ids, hf_text}
    int max_new_tokens = 0;
    QString error;        // non-empty: the oracle step has not run
};

// `subdir`: "ui_e2e" (the T5) or "ui_e2e/llama" under the oracle directory.
inline E2eManifest loadE2eManifest(const QString& subdir = QStringLiteral("ui_e2e")) {
    E2eManifest m;
    const QString path = QString::fromStdString(oracle_dir()) + QLatin1Char('/') + subdir + QStringLiteral("/manifest.json");
    QFile f(path);
    if (oracle_dir().empty() || !f.open(QIODevice::ReadOnly)) {
        m.error = path + QStringLiteral(": missing (run the ui_e2e_oracle CTest step)");
        return m;
    }
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    m.model = o.value(QStringLiteral("model")).toString();
    m.max_new_tokens = o.value(QStringLiteral("max_new_tokens")).toInt();
    const QJsonObject adapters = o.value(QStringLiteral("adapters")).toObject();
    for (auto it = adapters.begin(); it != adapters.end(); ++it)
        m.adapters.push_back({it.key(), it.value().toObject().value(QStringLiteral("dir")).toString()});
    m.prompts = o.value(QStringLiteral("prompts")).toArray();
    if (m.model.isEmpty() || m.adapters.size() != 2 || m.prompts.size() != 5) m.error = path + QStringLiteral(": incomplete");
    return m;
}

inline QStringList cliAdapterArgs(const E2eManifest& m) {
    QStringList args;
    for (const auto& a : m.adapters) args << QStringLiteral("--adapter") << a.name + QLatin1Char('=') + a.dir;
    return args;
}

// Runs lorascope-cli with `args`, feeding `input` on stdin; returns stdout, or an empty array and
// `error` filled when it did not exit cleanly.
inline QByteArray runCli(const QStringList& args, const QByteArray& input, QString* error) {
    const QString cli = QString::fromStdString(cli_path());
    if (cli.isEmpty() || !exists(cli_path())) {
        *error = QStringLiteral("LORASCOPE_CLI is not set or not built: ") + cli;
        return {};
    }
    QProcess p;
    p.start(cli, args);
    if (!p.waitForStarted(30000)) {
        *error = QStringLiteral("cannot start ") + cli;
        return {};
    }
    p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(300000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        *error = QStringLiteral("lorascope-cli %1 failed: %2").arg(args.join(QLatin1Char(' ')), QString::fromLocal8Bit(p.readAllStandardError()));
        return {};
    }
    return p.readAllStandardOutput();
}

inline std::vector<QJsonObject> parseJsonLines(const QByteArray& text) {
    std::vector<QJsonObject> out;
    for (const QByteArray& line : text.split('\n'))
        if (!line.trimmed().isEmpty()) out.push_back(QJsonDocument::fromJson(line).object());
    return out;
}

}  // namespace lorascope::test
