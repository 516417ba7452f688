// A `lorascope-cli serve --demo` child process on a free loopback port, for the tests of serve
// and of the window's remote backend.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "cli_process.h"
#include "test_env.h"

namespace lorascope::test {

inline QString q(const std::string& s) { return QString::fromStdString(s); }

// The JSON objects among `text`'s lines.
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        if (!line.empty() && line[0] == '{') out.push_back(nlohmann::json::parse(line));
        start = end + 1;
    }
    return out;
}

// What `lorascope-cli generate --demo` (or `model`'s options) answers for these request lines, by
// id: the reference the server's answers are compared with.
inline std::map<std::string, nlohmann::json> run_generate(const std::vector<nlohmann::json>& requests,
                                                          const QStringList& model = {"--demo"}) {
    QTemporaryDir dir;
    const QString path = dir.filePath("requests.jsonl");
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    for (const auto& r : requests) f.write((r.dump() + "\n").c_str());
    f.close();
    const auto r = run_cli_command(QStringList{"generate"} + model + QStringList{"--input", path});
    std::map<std::string, nlohmann::json> out;
    if (r.exit_code != 0) {
        qWarning("lorascope-cli generate failed: %s", r.err.c_str());
        return out;
    }
    for (const auto& line : json_lines(r.out)) out[line.at("id").get<std::string>()] = line;
    return out;
}

struct PyResult {
    int exit_code = -1;
    std::string out, err;
};

// Runs `script` with the oracle venv's Python (LORASCOPE_ORACLE_PYTHON) and waits for it.
inline PyResult run_python(const std::string& script, const QStringList& args, int timeout_ms = 300000) {
    QProcess p;
    p.start(q(env_path("LORASCOPE_ORACLE_PYTHON")), QStringList{q(script)} + args);
    PyResult r;
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished(5000);
        r.err = "timed out; stderr: " + p.readAllStandardError().toStdString();
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

// A `lorascope-cli serve` child process on a free loopback port.
struct Server {
    QProcess process;
    std::string url;
    nlohmann::json hello;
    std::string stderr_text;

    // `model`: the model options (the demo pack by default, or {"--model", DIR}).
    bool start(const QStringList& extra, const QStringList& model = {"--demo"}) {
        process.start(q(cli_path()), QStringList{"serve"} + model + QStringList{"--port", "0"} + extra);
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
