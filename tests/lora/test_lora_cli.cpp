// `lorascope-cli info --model DIR --adapter NAME=DIR...`: every adapter is validated against the
// model and reported with its rank, targets, parameter count and warnings; an adapter that fails
// validation makes the command fail with one line naming the file and the problem.
#include <QtTest>

#include <QProcess>

#include <nlohmann/json.hpp>

#include "lora_records.h"
#include "cli_process.h"
#include "test_env.h"

using namespace lorascope;
using nlohmann::json;

namespace {

using test::CliResult;

CliResult run_info(const QStringList& args) { return test::run_cli_command(QStringList{"info"} + args); }

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

class TestLoraCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void info_validates_and_reports_every_adapter() {
        const auto base = test::load_lora_base("bloom");
        QStringList args{"--model", q(base.model_dir)};
        for (const auto& a : base.adapter_names()) args << "--adapter" << q(a + "=" + base.adapter_dir(a));
        const CliResult r = run_info(args);
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const json info = json::parse(r.out);
        const auto names = base.adapter_names();
        QCOMPARE(info.at("adapters").size(), names.size());
        for (const auto& a : info.at("adapters")) {
            const std::string name = a.at("name").get<std::string>();
            int64_t r_expected = -1;
            for (const auto& run : base.records["runs"])
                if (run["adapter"] == name) r_expected = run["r"].get<int64_t>();
            QCOMPARE(a.at("applied").at("rank").get<int64_t>(), r_expected);
            QVERIFY(a.at("applied").at("parameters").get<int64_t>() > 0);
            QCOMPARE(a.at("applied").at("parameters").get<int64_t>(), a.at("parameters").get<int64_t>());
            const auto targets = a.at("applied").at("targets").get<std::vector<std::string>>();
            if (name == "all")
                QVERIFY(std::find(targets.begin(), targets.end(), "lm_head") != targets.end());
            if (name == "small") {
                QCOMPARE(a.at("validation").get<std::string>(), std::string("ok with warnings"));
                QVERIFY(a.at("warnings").dump().find("other-org/some-other-model") != std::string::npos);
            } else {
                QCOMPARE(a.at("validation").get<std::string>(), std::string("ok"));
            }
        }
    }

    void info_fails_with_one_line_for_invalid_adapters() {
        const auto t5 = test::load_lora_base("t5");
        const auto bart = test::load_lora_base("bart");
        auto check = [&](const std::string& dir, const std::string& needle) {
            const CliResult r = run_info({"--model", q(t5.model_dir), "--adapter", q("x=" + dir)});
            QVERIFY2(r.exit_code > 0, r.out.c_str());
            QVERIFY2(r.out.empty(), r.out.c_str());
            QVERIFY2(r.err.find(needle) != std::string::npos, r.err.c_str());
            QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1L);
        };
        check(test::broken_adapter_dir("wrong_shapes"), "input features");
        check(test::broken_adapter_dir("dora"), "DoRA");
        check(bart.adapter_dir("small"), "does not have");
    }
};

QTEST_APPLESS_MAIN(TestLoraCli)
#include "test_lora_cli.moc"
