// Every option a `lorascope-cli` command takes is named in its --help: the list of what a command
// takes comes from the command itself (an unknown option's error lists it), so an option added to a
// command but not to its usage text fails here. `serve` took the batching options for a release
// without naming them.
#include <QtTest>

#include <regex>
#include <set>
#include <string>

#include "cli_process.h"

using lorascope::test::CliResult;
using lorascope::test::run_cli_command;

class TestCliUsage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyOptionIsInTheHelp_data() {
        QTest::addColumn<QString>("command");
        for (const char* c : {"generate", "bench", "serve", "score", "tokenize", "info", "chat-template"})
            QTest::newRow(c) << QString(c);
    }

    void everyOptionIsInTheHelp() {
        QFETCH(QString, command);
        const CliResult refused = run_cli_command({command, "--no-such-option", "1"});
        QVERIFY2(refused.exit_code > 0, refused.err.c_str());   // refused, not crashed (-1)
        const std::string lead = "unknown option --no-such-option (this command takes ";
        const auto at = refused.err.find(lead);
        QVERIFY2(at != std::string::npos, refused.err.c_str());
        const std::string list = refused.err.substr(at + lead.size());

        const CliResult help = run_cli_command({command, "--help"});
        QCOMPARE(help.exit_code, 0);
        std::set<std::string> taken, missing;
        const std::regex option("--([a-z0-9-]+)");
        for (std::sregex_iterator it(list.begin(), list.end(), option), end; it != end; ++it) taken.insert((*it)[1]);
        QVERIFY2(taken.size() >= 3, list.c_str());
        for (const auto& name : taken) {
            if (name == "help") continue;
            // The name whole: --model must not be found inside --demo-model.
            const std::regex named("(^|[^a-z0-9-])--" + name + "([^a-z0-9-]|$)");
            if (!std::regex_search(help.out, named)) missing.insert(name);
        }
        std::string names;
        for (const auto& m : missing) names += " --" + m;
        QVERIFY2(missing.empty(), ("lorascope-cli " + command.toStdString() + " --help does not name" + names).c_str());
    }
};

QTEST_GUILESS_MAIN(TestCliUsage)
#include "test_cli_usage.moc"
