// Tokenizer behaviour that the parity records do not cover: clear errors on bad directories and
// files, streaming edge cases (context ids, UTF-8 split across tokens), and lorascope-cli tokenize.
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"
#include "parity_records.h"
#include "shared_skip.h"
#include "test_env.h"

#include <QtTest/QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

using lorascope::Error;
using lorascope::ErrorKind;
using nlohmann::json;

namespace {

void write_file(const QString& path, const std::string& content) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << content;
}

// load_tokenizer must throw a lorascope::Error whose message names `file_part` and `message_part`.
void expect_error(const std::string& dir, ErrorKind kind, const std::string& file_part, const std::string& message_part) {
    try {
        lorascope::load_tokenizer(dir);
    } catch (const Error& e) {
        const std::string what = e.what();
        QVERIFY2(e.kind() == kind, qPrintable(QString("kind %1 for: %2").arg(lorascope::to_string(e.kind())).arg(what.c_str())));
        QVERIFY2(what.find(file_part) != std::string::npos, what.c_str());
        QVERIFY2(what.find(message_part) != std::string::npos, what.c_str());
        return;
    }
    QFAIL(qPrintable(QString("no error for %1").arg(dir.c_str())));
}

json bloom_style_tokenizer_json() {
    const json record = lorascope::test::read_tokenizer_record("bloom_style");
    if (record.is_null()) return json();
    std::ifstream in(record["dir"].get<std::string>() + "/tokenizer.json");
    return json::parse(in);
}

struct CliResult {
    int exit_code;
    QByteArray out, err;
};

CliResult run_cli(const QStringList& args) {
    QProcess p;
    p.start(QString::fromStdString(lorascope::test::cli_path()), args);
    p.waitForFinished(60000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(), p.readAllStandardError()};
}

}  // namespace

class TestTokenizerUnits : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void errors_name_the_file_and_problem() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        expect_error(dir + "/absent", ErrorKind::NotFound, dir + "/absent", "no such directory");
        expect_error(dir, ErrorKind::NotFound, dir, "no tokenizer files");

        write_file(tmp.path() + "/vocab.json", "{\"a\": 0}");
        expect_error(dir, ErrorKind::NotFound, "merges.txt", "missing");
        write_file(tmp.path() + "/merges.txt", "#version: 0.2\na b\n");
        expect_error(dir, ErrorKind::Format, "merges.txt", "missing from the vocabulary");
        write_file(tmp.path() + "/vocab.json", "{\"a\": 0,");
        expect_error(dir, ErrorKind::Format, "vocab.json", "malformed JSON");

        write_file(tmp.path() + "/tokenizer.json", "{\"model\": ");
        expect_error(dir, ErrorKind::Format, "tokenizer.json", "malformed JSON");
        write_file(tmp.path() + "/tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
        expect_error(dir, ErrorKind::Unsupported, "tokenizer.json", "WordPiece");
        write_file(tmp.path() + "/tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
        expect_error(dir, ErrorKind::Unsupported, "tokenizer.json", "spiece.model");

        write_file(tmp.path() + "/spiece.model", "not a sentencepiece model");
        std::remove((dir + "/tokenizer.json").c_str());
        expect_error(dir, ErrorKind::Format, "spiece.model", "SentencePiece");
    }

    void unsupported_components_are_refused() {
        json base = bloom_style_tokenizer_json();
        if (base.is_null()) QFAIL("oracle record bloom_style missing (run the oracle_tokenizers step)");
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        struct Case {
            const char* pointer;
            json value;
            const char* message;
        };
        const Case cases[] = {
            {"/normalizer", json{{"type", "NFKC"}}, "normalizer of type 'NFKC'"},
            {"/pre_tokenizer", json{{"type", "Whitespace"}}, "pre_tokenizer of type 'Whitespace'"},
            {"/pre_tokenizer/pretokenizers/0/pattern", json{{"Regex", "\\w+"}}, "pre_tokenizer Split"},
            {"/decoder", json{{"type", "WordPiece"}}, "decoder of type 'WordPiece'"},
            {"/post_processor", json{{"type", "Whatever"}}, "post_processor of type 'Whatever'"},
            {"/model/continuing_subword_prefix", "##", "continuing_subword_prefix"},
        };
        for (const Case& c : cases) {
            json broken = base;
            broken[json::json_pointer(c.pointer)] = c.value;
            write_file(tmp.path() + "/tokenizer.json", broken.dump());
            expect_error(dir, ErrorKind::Unsupported, "tokenizer.json", c.message);
        }
    }

    void streaming_with_context_continues_the_text() {
        const json record = lorascope::test::read_tokenizer_record("bloom_style");
        if (record.is_null()) QFAIL("oracle record bloom_style missing (run the oracle_tokenizers step)");
        const auto tok = lorascope::load_tokenizer(record["dir"].get<std::string>());
        // A prompt that ends inside a multi-byte character must not cost the continuation its bytes.
        const std::vector<int64_t> ids = tok->encode("日本語とEnglishのmix 👨‍👩‍👧‍👦 done", false);
        QVERIFY(ids.size() > 4);
        const std::string full = tok->decode(ids, true);
        for (size_t split = 1; split < ids.size(); ++split) {
            const std::vector<int64_t> prompt(ids.begin(), ids.begin() + static_cast<long>(split));
            lorascope::StreamingDetokenizer detok(*tok, true, prompt);
            std::string continuation;
            for (size_t i = split; i < ids.size(); ++i) continuation += detok.push(ids[i]);
            continuation += detok.finish();
            lorascope::StreamingDetokenizer prompt_only(*tok, true);
            std::string shown;
            for (int64_t id : prompt) shown += prompt_only.push(id);
            QCOMPARE(QString::fromStdString(shown + continuation), QString::fromStdString(full));
        }
    }

    void arbitrary_bytes_never_crash() {
        // Text from C++ callers need not be valid UTF-8; every backend must survive it (run under ASan).
        std::vector<std::string> dirs;
        const json bloom = lorascope::test::read_tokenizer_record("bloom_style");
        if (bloom.is_null()) QFAIL("oracle record bloom_style missing (run the oracle_tokenizers step)");
        dirs.push_back(bloom["dir"].get<std::string>());
        const std::string shared = lorascope::test::shared_tokenizers();
        if (lorascope::test::exists(shared))
            for (const char* name : {"t5", "bart", "gpt2"}) dirs.push_back(shared + "/" + name);
        uint32_t state = 12345;
        auto next = [&state] { return state = state * 1664525u + 1013904223u; };
        for (const std::string& dir : dirs) {
            const auto tok = lorascope::load_tokenizer(dir);
            for (int round = 0; round < 200; ++round) {
                std::string text;
                const int length = static_cast<int>(next() % 40);
                for (int i = 0; i < length; ++i) {
                    const uint32_t r = next();
                    // Mostly raw bytes, sometimes pieces of special tokens and multi-byte sequences.
                    if (r % 7 == 0) text += "<extra_id_0>";
                    else if (r % 11 == 0) text += "</s>";
                    else if (r % 13 == 0) text += "\xE2\x96\x81";
                    else text += static_cast<char>((r >> 8) & 0xFF);
                }
                const auto ids = tok->encode(text);
                for (int64_t id : ids) QVERIFY(id >= 0 && id < tok->vocab_size());
                const std::string full = tok->decode(ids);
                lorascope::StreamingDetokenizer detok(*tok, false);
                std::string streamed;
                for (int64_t id : ids) streamed += detok.push(id);
                streamed += detok.finish();
                QCOMPARE(QByteArray::fromStdString(streamed), QByteArray::fromStdString(full));
            }
            // Ids outside the vocabulary are dropped by decode, as Hugging Face does.
            QCOMPARE(QByteArray::fromStdString(tok->decode({-1, tok->vocab_size(), 1LL << 40})), QByteArray());
        }
        if (!lorascope::test::exists(shared))
            LORASCOPE_SKIP_SHARED("shared tokenizer folder absent: only the oracle's BLOOM-style tokenizer was checked, "
                                  "not the real T5, BART and GPT-2 ones");
    }

    void cli_tokenize_matches_the_oracle() {
        QVERIFY2(lorascope::test::exists(lorascope::test::cli_path()),
                 qPrintable(QString("lorascope-cli is not built at %1").arg(lorascope::test::cli_path().c_str())));
        const json record = lorascope::test::read_tokenizer_record("bloom_style");
        if (record.is_null()) QFAIL("oracle record bloom_style missing (run the oracle_tokenizers step)");
        const QString dir = QString::fromStdString(record["dir"].get<std::string>());
        const json& entry = record["entries"][0];
        CliResult r = run_cli({"tokenize", "--model", dir, "--text", QString::fromStdString(entry["text"].get<std::string>())});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const json encoded = json::parse(r.out.toStdString());
        QCOMPARE(encoded["ids"].dump(), entry["ids"].dump());
        QCOMPARE(encoded["tokens"].dump(), entry["tokens"].dump());

        QStringList id_list;
        for (const auto& id : entry["ids"]) id_list << QString::number(id.get<int64_t>());
        r = run_cli({"tokenize", "--model", dir, "--ids", id_list.join(','), "--no-special"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(json::parse(r.out.toStdString())["text"].get<std::string>(), entry["decode_skip"].get<std::string>());

        r = run_cli({"tokenize", "--model", "/nonexistent/model", "--text", "x"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("/nonexistent/model") && r.err.contains("no such directory"), r.err.constData());
        r = run_cli({"tokenize", "--model", dir, "--ids", "1,x"});
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.err.contains("'x' is not an integer"), r.err.constData());
        r = run_cli({"tokenize", "--model", dir});
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.err.contains("--text or --ids"), r.err.constData());
    }
};

LORASCOPE_QTEST_GUILESS_MAIN(TestTokenizerUnits)
#include "test_tokenizer_units.moc"
