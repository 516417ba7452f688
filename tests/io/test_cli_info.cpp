// `lorascope-cli info` on HF-saved checkpoints and PEFT adapters: the summary agrees with the
// oracle's records (parameters, dtypes, bytes, adapter ranks and sizes, HF's special ids for the
// real tokenizers), --load checksums equal HF's sums, and bad inputs give one-line errors.
#include <QProcess>
#include <QtTest>

#include <cmath>
#include <map>
#include <set>

#include "cli_process.h"
#include "io_test_util.h"
#include "shared_skip.h"

using namespace lorascope;
using nlohmann::json;

namespace {

using test::CliResult;

CliResult run_cli(const QStringList& args) { return test::run_cli_command(QStringList{"info"} + args); }

json run_ok(const QStringList& args) {
    const CliResult r = run_cli(args);
    if (r.exit_code != 0) throw std::runtime_error("lorascope-cli info failed: " + r.err);
    return json::parse(r.out);
}

}  // namespace

class TestCliInfo : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void summaries_agree_with_oracle() {
        QVERIFY2(!test::cli_path().empty(), "LORASCOPE_CLI is not set");
        const std::string root = test::io_oracle_dir() + "/models";
        const json index = test::read_json_file(root + "/index.json");
        for (const auto& name_json : index.at("models")) {
            const std::string name = name_json.get<std::string>();
            const std::string dir = root + "/" + name;
            const json record = test::read_json_file(dir + ".json");
            const json info = run_ok({"--model", QString::fromStdString(dir), "--load"});

            QCOMPARE(info.at("model_type").get<std::string>(), record.at("model_type").get<std::string>());
            QCOMPARE(info.at("family").get<std::string>(), record.at("model_type").get<std::string>());
            int64_t parameters = 0;
            std::map<std::string, int64_t> by_dtype;
            for (const auto& [fname, t] : record.at("file_tensors").items()) {
                int64_t n = 1;
                for (int64_t d : t.at("shape").get<std::vector<int64_t>>()) n *= d;
                parameters += n;
                by_dtype[t.at("dtype").get<std::string>()] += n;
            }
            const json& w = info.at("weights");
            QCOMPARE(w.at("parameters").get<int64_t>(), parameters);
            const auto dtypes = w.at("dtypes").get<std::map<std::string, int64_t>>();
            QVERIFY2(dtypes == by_dtype, w.at("dtypes").dump().c_str());
            QCOMPARE(w.at("tensors").get<size_t>(), record.at("file_tensors").size());
            int64_t bytes = 0;
            for (const auto& f : QDir(QString::fromStdString(dir)).entryInfoList({"*.safetensors"}, QDir::Files))
                bytes += f.size();
            QCOMPARE(w.at("file_bytes").get<int64_t>(), bytes);
            QCOMPARE(w.at("sharded").get<bool>(), QFileInfo::exists(QString::fromStdString(dir + "/model.safetensors.index.json")));
            QVERIFY(info.at("tokenizer").contains("error"));  // the oracle's models carry no tokenizer files
            // What --dtype can mean on this CPU: the four CPU types, float32 always available,
            // each with what it computes or why this machine cannot run it.
            const json& compute = info.at("cpu_compute");
            QCOMPARE(compute.at("default").get<std::string>(), std::string("float32"));
            std::vector<std::string> names;
            for (const auto& t : compute.at("dtypes")) {
                names.push_back(t.at("dtype").get<std::string>());
                QVERIFY(!t.at("computes").get<std::string>().empty());
                if (names.back() == "float32") QVERIFY(t.at("available").get<bool>());
                // --kv-cache-dtype auto: float32 stays HF-exact, the reduced types halve the cache.
                QCOMPARE(t.at("kv_cache").get<std::string>(), std::string(names.back() == "float32" ? "float32" : "bfloat16"));
            }
            QCOMPARE(names, (std::vector<std::string>{"float32", "bfloat16", "int8", "int4"}));
            QVERIFY(compute.at("int8_accuracy").get<std::string>().find("int8") != std::string::npos);

            const json& load = info.at("load");
            QCOMPARE(load.at("tensors").get<size_t>(), record.at("file_tensors").size());
            const double expected = record.at("float_sum").get<double>();
            const double got = load.at("checksum").get<double>();
            QVERIFY2(std::fabs(got - expected) <= 1e-9 * std::max(1.0, std::fabs(expected)),
                     qPrintable(QString("%1: checksum %2 vs HF %3").arg(name.c_str()).arg(got, 0, 'g', 17).arg(expected, 0, 'g', 17)));
        }
    }

    void adapters_are_summarised() {
        const std::string root = test::io_oracle_dir();
        const std::string adapter = root + "/adapters/t5_patterns";
        const json record = test::read_json_file(adapter + ".json");
        const json info = run_ok({"--model", QString::fromStdString(root + "/models/t5_f32"), "--adapter",
                                  QString::fromStdString("pat=" + adapter)});
        QCOMPARE(info.at("adapters").size(), size_t(1));
        const json& a = info.at("adapters").at(0);
        QCOMPARE(a.at("name").get<std::string>(), std::string("pat"));
        QCOMPARE(a.at("parameters").get<int64_t>(), record.at("parameter_count").get<int64_t>());
        QCOMPARE(a.at("modules").get<size_t>(), record.at("modules").size());
        std::set<int64_t> ranks;
        for (const auto& [module, m] : record.at("modules").items()) ranks.insert(m.at("r").get<int64_t>());
        QVERIFY2(a.at("ranks").get<std::set<int64_t>>() == ranks, a.at("ranks").dump().c_str());
        // Validated against the model (tests/lora covers the failures).
        QVERIFY2(a.at("validation").get<std::string>().rfind("ok", 0) == 0, a.dump().c_str());
    }

    void real_tokenizer_special_ids() {
        const std::string shared = test::shared_tokenizers();
        if (shared.empty() || !test::exists(shared + "/t5/spiece.model"))
            LORASCOPE_SKIP_SHARED("shared tokenizer folder absent (../shared/tokenizers); tokenizer part of info not checked");
        const json records = test::read_json_file(test::io_oracle_dir() + "/tokenizers.json").at("tokenizers");
        QVERIFY2(records.contains("t5"), "oracle did not record the shared T5 tokenizer");
        // A checkpoint directory: the oracle's tiny T5 weights next to the real tokenizer files.
        QTemporaryDir tmp;
        const QString dir = tmp.path();
        const QString model = QString::fromStdString(test::io_oracle_dir() + "/models/t5_f32");
        QVERIFY(QFile::link(model + "/config.json", dir + "/config.json"));
        QVERIFY(QFile::link(model + "/model.safetensors", dir + "/model.safetensors"));
        for (const auto& f : QDir(QString::fromStdString(shared + "/t5")).entryInfoList(QDir::Files))
            QVERIFY(QFile::link(f.absoluteFilePath(), dir + "/" + f.fileName()));
        const json info = run_ok({"--model", dir});
        const json& tok = info.at("tokenizer");
        QVERIFY2(!tok.contains("error"), tok.dump().c_str());
        const json& hf = records.at("t5");
        QCOMPARE(tok.at("vocab_size").get<int64_t>(), hf.at("vocab_size").get<int64_t>());
        for (const char* key : {"bos", "eos", "pad", "unk"})
            QVERIFY2(tok.at("special_ids").at(key) == hf.at(key), key);
    }

    void bad_inputs_give_one_line_errors() {
        const std::string root = test::io_oracle_dir();
        auto check = [](const QStringList& args, const std::string& needle) {
            const CliResult r = run_cli(args);
            QVERIFY2(r.exit_code > 0, qPrintable(args.join(' ')));
            QVERIFY2(r.out.empty(), r.out.c_str());
            QVERIFY2(r.err.find(needle) != std::string::npos, r.err.c_str());
            QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1L);
        };
        check({"--model", "/nonexistent/lorascope"}, "/nonexistent/lorascope");
        check({}, "--model");
        check({"--model", QString::fromStdString(root + "/models/t5_f32"), "--adapter", "noequals"}, "NAME=DIR");
        check({"--model", QString::fromStdString(root + "/models/t5_f32"), "--adapter",
               QString::fromStdString("d=" + root + "/adapters/bloom_dora")}, "DoRA");
        check({"--model", QString::fromStdString(root + "/models/t5_f32"), "--bogus", "1"}, "bogus");
        QTemporaryDir tmp;
        test::write_file(tmp.path().toStdString() + "/config.json", R"({"model_type": "t5"})");
        test::write_file(tmp.path().toStdString() + "/pytorch_model.bin", "pickle");
        check({"--model", tmp.path()}, "arbitrary code");
    }
};

LORASCOPE_QTEST_GUILESS_MAIN(TestCliInfo)
#include "test_cli_info.moc"
