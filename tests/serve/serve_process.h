// A `lorascope-cli serve --demo` child process on a free loopback port, for the tests of serve
// and of the window's remote backend.
#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QStringList>

#include <nlohmann/json.hpp>

#include <string>

#include "test_env.h"

namespace lorascope::test {

inline QString q(const std::string& s) { return QString::fromStdString(s); }

// A `lorascope-cli serve` child process on a free loopback port.
struct Server {
    QProcess process;
    std::string url;
    nlohmann::json hello;
    std::string stderr_text;

    bool start(const QStringList& extra) {
        process.start(q(cli_path()), QStringList{"serve", "--demo", "--port", "0"} + extra);
        if (!process.waitForStarted(30000)) return false;
        // The first stdout line says where it listens; loading the demo model takes a moment.
        QElapsedTimer t;
        t.start();
        while (!process.canReadLine() && t.elapsed() < 120000 && process.state() == QProcess::Running)
            process.waitForReadyRead(500);
        if (!process.canReadLine()) return false;
        hello = nlohmann::json::parse(process.readLine().toStdString());
        url = hello.at("listening").get<std::string>();
        return true;
    }
    // SIGTERM, then the exit status (-1 if it did not exit in time or crashed).
    int stop(int timeout_ms = 60000) {
        if (process.state() == QProcess::Running) process.terminate();
        if (!process.waitForFinished(timeout_ms)) {
            process.kill();
            process.waitForFinished(5000);
            return -1;
        }
        stderr_text += process.readAllStandardError().toStdString();
        return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    }
    ~Server() { stop(10000); }
};

}  // namespace lorascope::test
