// Runs lorascope-cli (LORASCOPE_CLI) as a child process, as a script would.
#pragma once

#include <QProcess>
#include <QStringList>

#include <string>

#include "test_env.h"

namespace lorascope::test {

struct CliResult {
    int exit_code = -1;   // -1: crashed or timed out
    std::string out, err;
};

inline CliResult run_cli_command(const QStringList& args, int timeout_ms = 120000) {
    QProcess p;
    p.start(QString::fromStdString(cli_path()), args);
    CliResult r;
    if (!p.waitForFinished(timeout_ms)) return r;
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

}  // namespace lorascope::test
