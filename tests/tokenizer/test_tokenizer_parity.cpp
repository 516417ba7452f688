// Parity with Hugging Face's tokenizers on the corpus (tests/data/tokenizer_corpus.json plus the
// oracle's stress strings) and a 100,000-character input: identical ids, tokens and decodes (with
// and without special tokens), decodes of random and decoder-edge id sequences, encodings with a
// source language or as target text, the language codes, and streaming detokenization equal to
// the full decode, for every tokenizer the oracles record (parity_records.h).
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"
#include "parity_records.h"
#include "shared_skip.h"
#include "test_env.h"
#include "thread_cpu_time.h"

#include <QtTest/QtTest>


using lorascope::StreamingDetokenizer;
using lorascope::Tokenizer;
using nlohmann::json;

namespace {

std::vector<int64_t> as_ids(const json& j) { return j.get<std::vector<int64_t>>(); }

std::string show(const std::string& s) { return json(s).dump(-1, ' ', true, json::error_handler_t::replace); }

std::string show(const std::vector<int64_t>& ids) { return json(ids).dump(); }

bool valid_utf8(const std::string& s) {
    try {
        (void)json(s).dump();
        return true;
    } catch (const json::exception&) {
        return false;
    }
}

// Streams ids one at a time; checks every delta is whole UTF-8 and returns the concatenation.
std::string stream(const Tokenizer& tok, const std::vector<int64_t>& ids, bool skip, bool* deltas_valid) {
    StreamingDetokenizer detok(tok, skip);
    std::string text;
    for (int64_t id : ids) {
        const std::string delta = detok.push(id);
        if (!valid_utf8(delta)) *deltas_valid = false;
        text += delta;
    }
    const std::string rest = detok.finish();
    if (!valid_utf8(rest)) *deltas_valid = false;
    return text + rest;
}

struct Tally {
    int total = 0, failed = 0;
    std::string first_failures;
    void check(bool ok, const std::string& what) {
        ++total;
        if (ok) return;
        if (++failed <= 8) first_failures += "\n  " + what;
    }
    std::string summary(const char* name) const {
        return std::string(name) + " " + std::to_string(total - failed) + "/" + std::to_string(total);
    }
};

struct Tallies {
    Tally ids, ids_plain, tokens, decodes, decodes_skip, streams, deltas, encodes;

    // decode(ids, skip) against HF's, and streaming against decode, both ways.
    void check_decodes(const Tokenizer& tok, const std::vector<int64_t>& ids, const json& record, const std::string& what) {
        for (bool skip : {false, true}) {
            const std::string want = record[skip ? "decode_skip" : "decode"].get<std::string>();
            const std::string full = tok.decode(ids, skip);
            (skip ? decodes_skip : decodes).check(full == want, what + ": decode(skip=" + (skip ? "1" : "0") + ") " + show(full) +
                                                                    " != HF " + show(want));
            bool whole = true;
            const std::string streamed = stream(tok, ids, skip, &whole);
            streams.check(streamed == full, what + ": streamed " + show(streamed) + " != decode " + show(full));
            deltas.check(whole, what + ": a streamed delta was not whole UTF-8");
        }
    }

    std::string failures() const {
        std::string out;
        for (const Tally* t : {&ids, &ids_plain, &tokens, &decodes, &decodes_skip, &streams, &deltas, &encodes}) out += t->first_failures;
        return out;
    }
};

void check_entries(const Tokenizer& tok, const json& record, Tallies& t) {
    for (const json& e : record["entries"]) {
        const std::string text = e["text"].get<std::string>();
        const auto expected = as_ids(e["ids"]);
        const auto got = tok.encode(text);
        t.ids.check(got == expected, show(text) + ": ids " + show(got) + " != HF " + show(expected));
        const auto got_plain = tok.encode(text, false);
        t.ids_plain.check(got_plain == as_ids(e["ids_no_special"]),
                          show(text) + ": ids without specials " + show(got_plain) + " != HF " + e["ids_no_special"].dump());
        std::vector<std::string> names;
        for (int64_t id : expected) names.push_back(tok.id_to_token(id));
        t.tokens.check(names == e["tokens"].get<std::vector<std::string>>(), show(text) + ": tokens differ");
        t.check_decodes(tok, expected, e, show(text));
    }
    for (const json& r : record["random"]) {
        const auto seq = as_ids(r["ids"]);
        t.check_decodes(tok, seq, r, "ids " + show(seq));
    }
}

// Encodings under options: a source language, target text, a target language.
void check_encodes(const Tokenizer& tok, const json& record, Tallies& t) {
    for (const json& e : record["encodes"]) {
        lorascope::EncodeOptions options;
        const json& o = e["options"];
        options.src_lang = o.value("src_lang", "");
        options.target = o.value("target", false);
        options.tgt_lang = o.value("tgt_lang", "");
        const std::string text = e["text"].get<std::string>();
        std::vector<int64_t> got;
        try {
            got = tok.encode(text, options);
        } catch (const lorascope::Error& error) {
            t.encodes.check(false, show(text) + " with " + o.dump() + ": " + error.what());
            continue;
        }
        t.encodes.check(got == as_ids(e["ids"]), show(text) + " with " + o.dump() + ": ids " + show(got) + " != HF " + e["ids"].dump());
    }
    if (!record.contains("language_codes")) {
        QVERIFY2(tok.language_codes().empty(), "language codes where HF has none");
        return;
    }
    std::vector<std::string> codes;
    for (const auto& [code, id] : record["language_codes"].items()) {
        codes.push_back(code);
        QVERIFY2(tok.language_token_id(code) == id.get<int64_t>(), qPrintable(QString::fromStdString("language code " + code)));
    }
    auto ours = tok.language_codes();
    std::sort(ours.begin(), ours.end());
    QCOMPARE(ours, codes);  // json objects list their keys sorted
}

}  // namespace

class TestTokenizerParity : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parity_data() {
        QTest::addColumn<QString>("name");
        for (const std::string& name : lorascope::test::tokenizer_record_names()) QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }

    void parity() {
        QFETCH(QString, name);
        const std::string record_name = name.toStdString();
        if (lorascope::test::needs_shared_folder(record_name) && !lorascope::test::exists(lorascope::test::shared_tokenizers()))
            LORASCOPE_SKIP_SHARED(qPrintable("shared tokenizer folder absent (" + QString::fromStdString(lorascope::test::shared_tokenizers()) +
                             "): real T5/BART/GPT-2/Mistral files are not in the repository"));
        const json record = lorascope::test::read_tokenizer_record(record_name);
        if (record.is_null())
            QFAIL(qPrintable("oracle record missing: " + QString::fromStdString(lorascope::test::tokenizer_record_path(record_name)) +
                             " (run the oracle_tokenizers and oracle_seq2seq_tokenizers steps)"));

        std::unique_ptr<Tokenizer> tok;
        try {
            tok = lorascope::load_tokenizer(record["dir"].get<std::string>());
        } catch (const lorascope::Error& e) {
            QFAIL(e.what());
        }
        qInfo("%s: %s", record_name.c_str(), tok->describe().c_str());
        QCOMPARE(tok->vocab_size(), record["vocab_size"].get<int64_t>());
        const auto& ids = tok->special_ids();
        const std::pair<const char*, std::optional<int64_t>> specials[] = {{"bos", ids.bos}, {"eos", ids.eos}, {"pad", ids.pad}, {"unk", ids.unk}};
        for (const auto& [key, got] : specials) {
            const json& expected = record["special_ids"][key];
            QVERIFY2(expected.is_null() ? !got.has_value() : got == expected.get<int64_t>(), key);
        }
        QCOMPARE(tok->clean_up_tokenization_spaces(), record["clean_up_tokenization_spaces"].get<bool>());

        Tallies t;
        check_entries(*tok, record, t);
        check_encodes(*tok, record, t);

        const json& long_input = record["long"];
        // Encoded by a fresh tokenizer so that the corpus has not warmed its BPE cache.
        const auto fresh = lorascope::load_tokenizer(record["dir"].get<std::string>());
        // CPU time of this thread, not wall-clock time: the bound is on the work, which a loaded
        // machine does not change (a waiting thread accrues no CPU time).
        const double start = lorascope::test::thread_cpu_ms();
        const auto long_ids = fresh->encode(long_input["text"].get<std::string>());
        const double encode_ms = lorascope::test::thread_cpu_ms() - start;
        t.ids.check(long_ids == as_ids(long_input["ids"]), "100,000-character input: ids differ");
        t.check_decodes(*tok, long_ids, long_input, "100,000-character input");

        qInfo("%s: %s, %s, %s, %s, %s, %s, %s, %s; 100,000 characters -> %zu ids encoded in %.1f ms of CPU", record_name.c_str(),
              t.ids.summary("ids").c_str(), t.ids_plain.summary("ids without specials").c_str(), t.tokens.summary("tokens").c_str(),
              t.decodes.summary("decodes").c_str(), t.decodes_skip.summary("decodes skipping specials").c_str(),
              t.streams.summary("streams").c_str(), t.deltas.summary("whole-UTF-8 deltas").c_str(),
              t.encodes.summary("encodes with options").c_str(), long_ids.size(), encode_ms);
        const std::string failures = t.failures();
        QVERIFY2(failures.empty(), failures.c_str());
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
        // The performance bar holds for optimised builds only.
        QVERIFY2(encode_ms < 1000.0, qPrintable(QString("100,000 characters took %1 ms of CPU to encode").arg(encode_ms)));
#endif
    }
};

LORASCOPE_QTEST_APPLESS_MAIN(TestTokenizerParity)
#include "test_tokenizer_parity.moc"
