// Chat templates rendered byte for byte as transformers' apply_chat_template renders them (the
// records of tests/oracle/chat_oracle.py): every template of ../shared/chat-templates over the
// recorded conversations, the same templates read from tokenizer_config.json (string and named
// list forms), and small templates covering jinja2's semantics. A render transformers refuses must
// fail here too; a template's own refusal (raise_exception) with transformers' message exactly.
#include "chat_records.h"
#include "lorascope/chat.h"
#include "lorascope/error.h"
#include "shared_skip.h"
#include "test_env.h"

#include <QtTest/QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <fstream>
#include <map>

using lorascope::ChatTemplate;
using lorascope::Error;
using lorascope::ErrorKind;
using lorascope::test::OrderedJson;

namespace {

const OrderedJson& records() { return lorascope::test::oracle_records("chat/records.json"); }

// Renders one record with `render` and checks it against what transformers did. Returns a
// description of the mismatch, or "" when it agrees.
template <class Render>
std::string check(const OrderedJson& record, Render&& render) {
    std::string got;
    try {
        got = render();
    } catch (const Error& e) {
        if (!record.contains("error")) return std::string("failed where transformers rendered: ") + e.what();
        // The template's own refusal is the request's error, with transformers' message exactly.
        if (record["error_type"] == "TemplateError" && e.message() != record["error"].get<std::string>())
            return "refused with '" + e.message() + "', transformers with '" + record["error"].get<std::string>() + "'";
        return "";
    }
    if (record.contains("error")) return "rendered where transformers raised " + record["error_type"].get<std::string>() + ": " + record["error"].get<std::string>();
    const std::string want = record["expected"].get<std::string>();
    return got == want ? "" : lorascope::test::first_difference(got, want);
}

struct CliRun {
    int exit_code;
    std::string out, err;
};

CliRun run_cli(const QStringList& args) {
    QProcess p;
    p.start(QString::fromStdString(lorascope::test::cli_path()), args);
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput().toStdString(),
            p.readAllStandardError().toStdString()};
}

QString clock_argument(const OrderedJson& records) {
    const auto c = lorascope::test::recorded_clock(records);
    return QString::asprintf("%04d-%02d-%02dT%02d:%02d:%02d", c.year, c.month, c.day, c.hour, c.minute, c.second);
}

}  // namespace

class TestChatTemplateParity : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(records().is_object(), "no chat records: run the oracle_chat step");
        qInfo("reference: transformers %s, jinja2 %s", records()["versions"]["transformers"].get<std::string>().c_str(),
              records()["versions"]["jinja2"].get<std::string>().c_str());
    }

    void shared_templates_render_as_transformers() {
        if (records().contains("skipped")) LORASCOPE_SKIP_SHARED(records()["skipped"].get<std::string>().c_str());
        const std::string dir = records()["templates_dir"].get<std::string>();
        std::map<std::string, ChatTemplate> parsed;
        int failures = 0, refused = 0;
        const auto& renders = records()["renders"];
        for (const auto& record : renders) {
            const std::string file = record["template"].get<std::string>();
            if (!parsed.count(file)) parsed.emplace(file, ChatTemplate::parse(lorascope::test::read_text(dir + "/" + file), file));
            const std::string problem = check(record, [&] {
                return parsed.at(file).render(lorascope::test::recorded_conversation(record), lorascope::test::recorded_options(records(), record));
            });
            refused += record.contains("error") ? 1 : 0;
            if (!problem.empty() && ++failures <= 10)
                qWarning("%s x %s (add_generation_prompt=%d): %s", file.c_str(), record["conversation"].get<std::string>().c_str(),
                         record["add_generation_prompt"].get<bool>(), problem.c_str());
        }
        qInfo("%zu renders of %zu templates, %d of them refused by transformers", renders.size(), parsed.size(), refused);
        QVERIFY(renders.size() >= 200);
        QVERIFY(parsed.size() == 9);
        QCOMPARE(failures, 0);
    }

    // Gemma's template refuses a system turn through raise_exception: the render fails with an
    // Error whose message is transformers' message, naming the template as its file.
    void a_template_refusal_is_an_error_with_its_message() {
        if (records().contains("skipped")) LORASCOPE_SKIP_SHARED(records()["skipped"].get<std::string>().c_str());
        const std::string dir = records()["templates_dir"].get<std::string>();
        const auto t = ChatTemplate::parse(lorascope::test::read_text(dir + "/google-gemma-2-2b-it.jinja"), "gemma.jinja");
        lorascope::Conversation c;
        c.messages = {{"system", "Be brief.", ""}, {"user", "Hi", ""}};
        try {
            t.render(c, {});
            QFAIL("no refusal");
        } catch (const Error& e) {
            QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
            QCOMPARE(QString::fromStdString(e.message()), QString("System role not supported"));
            QCOMPARE(QString::fromStdString(e.path()), QString("gemma.jinja"));
        }
    }

    void tokenizer_config_templates_render_as_transformers() {
        if (records().contains("skipped")) LORASCOPE_SKIP_SHARED(records()["skipped"].get<std::string>().c_str());
        int failures = 0, checked = 0;
        bool saw_list = false, saw_string = false;
        for (const auto& config : records()["configs"]) {
            const std::string dir = lorascope::test::oracle_dir() + "/chat/" + config["dir"].get<std::string>();
            (config["form"] == "list" ? saw_list : saw_string) = true;
            const auto templates = lorascope::ModelChatTemplates::load(dir);
            for (const auto& record : config["renders"]) {
                ++checked;
                const std::string problem = check(record, [&] {
                    return templates.render(lorascope::test::recorded_conversation(record), lorascope::test::recorded_options(records(), record));
                });
                if (!problem.empty() && ++failures <= 10)
                    qWarning("%s x %s: %s", config["dir"].get<std::string>().c_str(), record["conversation"].get<std::string>().c_str(),
                             problem.c_str());
            }
        }
        QVERIFY(saw_list && saw_string);
        QVERIFY(checked >= 40);
        QCOMPARE(failures, 0);
    }

    // lorascope-cli chat-template prints exactly what transformers renders, from a model directory's
    // tokenizer_config.json or from a template file with its special tokens given.
    void cli_prints_the_rendered_prompt() {
        if (records().contains("skipped")) LORASCOPE_SKIP_SHARED(records()["skipped"].get<std::string>().c_str());
        QTemporaryDir tmp;
        int compared = 0;
        for (const auto& config : records()["configs"]) {
            if (config["dir"] != "configs/list_default_tool_use") continue;
            const QString dir = QString::fromStdString(lorascope::test::oracle_dir() + "/chat/" + config["dir"].get<std::string>());
            for (const auto& record : config["renders"]) {
                if (record.contains("error")) continue;
                OrderedJson input = {{"messages", record["messages"]}, {"tools", record["tools"]}};
                std::ofstream(tmp.filePath("in.json").toStdString()) << input.dump();
                QStringList args = {"chat-template", "--model", dir, "--messages", tmp.filePath("in.json"), "--now", clock_argument(records())};
                if (!record["add_generation_prompt"].get<bool>()) args << "--no-generation-prompt";
                const CliRun run = run_cli(args);
                QVERIFY2(run.exit_code == 0, run.err.c_str());
                QCOMPARE(QString::fromStdString(run.out), QString::fromStdString(record["expected"].get<std::string>()));
                ++compared;
            }
        }
        QVERIFY(compared >= 4);
        for (const auto& record : records()["renders"]) {
            if (record["template"] != "google-gemma-2-2b-it.jinja" || record["conversation"] != "system_single") continue;
            std::ofstream(tmp.filePath("in.json").toStdString()) << record["messages"].dump();
            const QString file = QString::fromStdString(records()["templates_dir"].get<std::string>()) + "/google-gemma-2-2b-it.jinja";
            const CliRun run = run_cli({"chat-template", "--template", file, "--messages", tmp.filePath("in.json"), "--special", "bos_token=<bos>"});
            QCOMPARE(run.exit_code, 2);  // the template's refusal: an invalid request for this model
            QVERIFY2(run.err.find(file.toStdString() + ": System role not supported") != std::string::npos, run.err.c_str());
        }
    }

    // Each small template: transformers' output, its failure, or (beyond the subset) our refusal.
    void jinja2_semantics_agree() {
        const auto& r = records();
        lorascope::Conversation c = lorascope::parse_conversation_json(r["synthetic_messages"].dump(), "", "records");
        c.variables_json = r["synthetic_context"].dump();
        lorascope::ChatRenderOptions options;
        options.now = lorascope::test::recorded_clock(r);
        int failures = 0;
        for (const auto& record : r["synthetic"]) {
            const std::string name = record["name"].get<std::string>();
            std::string problem;
            if (record["beyond"].get<bool>()) {
                try {
                    ChatTemplate::parse(record["source"].get<std::string>(), name).render(c, options);
                    problem = "rendered a template outside the subset instead of refusing it";
                } catch (const Error& e) {
                    if (e.kind() != ErrorKind::Unsupported) problem = std::string("refused, but not as unsupported: ") + e.what();
                }
            } else {
                problem = check(record, [&] { return ChatTemplate::parse(record["source"].get<std::string>(), name).render(c, options); });
            }
            if (!problem.empty() && ++failures <= 20) qWarning("%s: %s", name.c_str(), problem.c_str());
        }
        QVERIFY(r["synthetic"].size() >= 70);
        QCOMPARE(failures, 0);
    }
};

LORASCOPE_QTEST_APPLESS_MAIN(TestChatTemplateParity)
#include "test_chat_template_parity.moc"
