// Tokenizer behaviour that the parity records do not cover: clear errors on bad directories and
// files, requests for languages a tokenizer lacks, streaming edge cases (context ids, UTF-8 split
// across tokens, byte-fallback runs held whole), and lorascope-cli tokenize.
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"
#include "parity_records.h"
#include "shared_skip.h"
#include "test_env.h"

#include <QtTest/QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
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

// encode must refuse the options with InvalidArgument naming `message_part`.
void expect_encode_error(const lorascope::Tokenizer& tok, const lorascope::EncodeOptions& options, const std::string& message_part) {
    try {
        tok.encode("Hello", options);
    } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::InvalidArgument);
        QVERIFY2(std::string(e.what()).find(message_part) != std::string::npos, e.what());
        return;
    }
    QFAIL(qPrintable(QString::fromStdString("encode accepted options it should refuse (" + message_part + ")")));
}

json bloom_style_tokenizer_json() {
    const json record = lorascope::test::read_tokenizer_record("bloom_style");
    if (record.is_null()) return json();
    std::ifstream in(record["dir"].get<std::string>() + "/tokenizer.json");
    return json::parse(in);
}

// A Llama-style tokenizer.json (BPE with byte fallback, Metaspace "first", Replace + ByteFallback +
// Fuse + Strip) small enough to write here: every byte as <0xXX>, and only "a", "b", "▁", "▁a".
std::string write_byte_fallback_tokenizer(const QString& dir) {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 3 + b;
    }
    vocab["\u2581"] = 259;
    vocab["a"] = 260;
    vocab["\u2581a"] = 261;
    vocab["b"] = 262;
    json added = json::array();
    for (int id = 0; id < 3; ++id)
        added.push_back({{"id", id}, {"content", id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>"}, {"special", true},
                         {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"single_word", false}});
    const json tokenizer = {
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "Sequence"},
                     {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                   {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
                                   {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
                   {"vocab", vocab}, {"merges", {"\u2581 a"}}}}};
    write_file(dir + "/tokenizer.json", tokenizer.dump());
    return dir.toStdString();
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
        expect_error(dir, ErrorKind::Format, "tokenizer.json", "Unigram vocabulary is not a non-empty list");
        std::remove((dir + "/tokenizer.json").c_str());
        write_file(tmp.path() + "/sentencepiece.bpe.model", "not a sentencepiece model");
        expect_error(dir, ErrorKind::Unsupported, "sentencepiece.bpe.model", "MBart50Tokenizer or NllbTokenizer");
        std::remove((dir + "/sentencepiece.bpe.model").c_str());
        write_file(tmp.path() + "/tokenizer.model", "not a sentencepiece model");
        expect_error(dir, ErrorKind::Format, "tokenizer.model", "SentencePiece");
        std::remove((dir + "/tokenizer.model").c_str());
        write_file(tmp.path() + "/tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");

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
            // An unknown Split pattern is refused by name (no regex engine runs it).
            {"/pre_tokenizer/pretokenizers/0/pattern", json{{"Regex", "\\w+"}}, "pre_tokenizer Split with pattern {\"Regex\":\"\\\\w+\"}"},
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
        QTemporaryDir tmp;
        std::vector<std::unique_ptr<lorascope::Tokenizer>> tokenizers;
        tokenizers.push_back(lorascope::load_tokenizer(record["dir"].get<std::string>()));
        tokenizers.push_back(lorascope::load_tokenizer(write_byte_fallback_tokenizer(tmp.path())));  // byte-fallback runs
        for (const auto& tok : tokenizers) {
            // A prompt that ends inside a multi-byte character must not cost the continuation its bytes.
            const std::vector<int64_t> ids = tok->encode("日本語とEnglishのmix 👨‍👩‍👧‍👦 done a", false);
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
    }

    void byte_fallback_runs_stream_whole() {
        QTemporaryDir tmp;
        const auto tok = lorascope::load_tokenizer(write_byte_fallback_tokenizer(tmp.path()));
        QCOMPARE(to_string(tok->kind()), "sentencepiece-bpe");
        // "€" (E2 82 AC) is not in the vocabulary: three byte tokens, each of which alone is no text.
        const auto ids = tok->encode("a\u20AC b \U0001F600a", false);
        const int64_t e2 = *tok->token_to_id("<0xE2>"), x82 = *tok->token_to_id("<0x82>"), xac = *tok->token_to_id("<0xAC>");
        const int64_t euro[] = {e2, x82, xac};
        QVERIFY(std::search(ids.begin(), ids.end(), std::begin(euro), std::end(euro)) != ids.end());
        QCOMPARE(QString::fromStdString(tok->decode(ids)), QString::fromUtf8("a\u20AC b \U0001F600a"));
        lorascope::StreamingDetokenizer detok(*tok, true);
        std::string streamed;
        for (int64_t id : ids) {
            const std::string delta = detok.push(id);
            // A byte token never shows on its own: the run waits for the token that ends it.
            if (tok->id_to_token(id).rfind("<0x", 0) == 0) QCOMPARE(QByteArray::fromStdString(delta), QByteArray());
            QCOMPARE(QString::fromStdString(delta).toUtf8(), QByteArray::fromStdString(delta));  // whole characters only
            streamed += delta;
        }
        streamed += detok.finish();
        QCOMPARE(QByteArray::fromStdString(streamed), QByteArray::fromStdString(tok->decode(ids)));
        // Cut runs, runs around a special token (kept or skipped), a run ended by finish(): streaming
        // equals decode (which the Mistral parity records hold to Hugging Face's).
        const int64_t a = *tok->token_to_id("a"), eos = *tok->token_to_id("</s>");
        const std::vector<std::vector<int64_t>> runs = {{e2, x82, a}, {e2, eos, x82, xac}, {e2, x82}, {xac, e2, x82, xac, a}};
        for (const auto& run : runs)
            for (bool skip : {false, true}) {
                lorascope::StreamingDetokenizer d(*tok, skip);
                std::string text;
                for (int64_t id : run) text += d.push(id);
                text += d.finish();
                QCOMPARE(QByteArray::fromStdString(text), QByteArray::fromStdString(tok->decode(run, skip)));
            }
    }

    void languages_are_checked() {
        const json mbart = lorascope::test::read_tokenizer_record("mbart50_json");
        const json mt5 = lorascope::test::read_tokenizer_record("mt5_json");
        if (mbart.is_null() || mt5.is_null()) QFAIL("oracle records missing (run the oracle_seq2seq_tokenizers step)");
        const auto multilingual = lorascope::load_tokenizer(mbart["dir"].get<std::string>());
        QCOMPARE(multilingual->language_codes().size(), size_t(52));
        QVERIFY(multilingual->language_token_id("fr_XX").has_value());
        QVERIFY(!multilingual->language_token_id("xx_YY").has_value());
        QVERIFY(!multilingual->language_token_id("</s>").has_value());  // a token, but no language code
        lorascope::EncodeOptions options;
        options.src_lang = "xx_YY";
        expect_encode_error(*multilingual, options, "'xx_YY'");
        options.src_lang = "fr_XX";
        QCOMPARE(multilingual->encode("Hello", options).front(), *multilingual->language_token_id("fr_XX"));
        const auto monolingual = lorascope::load_tokenizer(mt5["dir"].get<std::string>());
        QVERIFY(monolingual->language_codes().empty());
        expect_encode_error(*monolingual, options, "no language codes");
    }

    void arbitrary_bytes_never_crash() {
        // Text from C++ callers need not be valid UTF-8; every backend must survive it (run under ASan).
        std::vector<std::string> dirs;
        const json bloom = lorascope::test::read_tokenizer_record("bloom_style");
        if (bloom.is_null()) QFAIL("oracle record bloom_style missing (run the oracle_tokenizers step)");
        dirs.push_back(bloom["dir"].get<std::string>());
        // One of every kind the oracles train: Llama 3 and Qwen2 splits, Unigram, BPE, Marian's pair.
        for (const char* name : {"llama3_style", "qwen2_style", "mt5_json", "marian", "mbart50_model", "nllb_json", "pegasus_model"}) {
            const json record = lorascope::test::read_tokenizer_record(name);
            if (record.is_null()) QFAIL(qPrintable(QString("oracle record %1 missing").arg(name)));
            dirs.push_back(record["dir"].get<std::string>());
        }
        QTemporaryDir tmp;
        dirs.push_back(write_byte_fallback_tokenizer(tmp.path()));
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
            // Ids outside the vocabulary are dropped by decode, as Hugging Face's fast tokenizers do
            // (Marian's slow one spells them <unk>).
            const std::string outside = tok->decode({-1, tok->vocab_size(), 1LL << 40});
            QCOMPARE(QByteArray::fromStdString(outside), tok->kind() == lorascope::TokenizerKind::SentencePiecePair
                                                             ? QByteArray("<unk> <unk> <unk>") : QByteArray());
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
