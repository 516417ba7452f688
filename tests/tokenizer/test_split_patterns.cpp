// The hand-written Split matchers (engine/src/tokenizer/split_patterns.h) on one-megabyte inputs of
// one character class and of alternations: the pieces Hugging Face's own Split makes of them
// (recorded by tokenizers_oracle.py: counts, first and last pieces), pieces that always rebuild the
// input, and whole tokenizers that finish such inputs (assertions on results, never on time: a
// backtracking matcher would not finish at all).
#include "lorascope/tokenizer.h"
#include "parity_records.h"
#include "shared_skip.h"
#include "test_env.h"
#include "tokenizer/split_patterns.h"

#include <QtTest/QtTest>

using lorascope::tokenizer::SplitPattern;
using nlohmann::json;

namespace {

std::string repeat(const std::string& unit, size_t times) {
    std::string out;
    out.reserve(unit.size() * times);
    for (size_t i = 0; i < times; ++i) out += unit;
    return out;
}

std::string joined(const std::vector<std::string>& pieces) {
    std::string out;
    for (const std::string& p : pieces) out += p;
    return out;
}

json read_split_stress() {
    std::ifstream in(lorascope::test::oracle_dir() + "/tokenizers/split_stress.json", std::ios::binary);
    if (!in) return json();
    return json::parse(in);
}

}  // namespace

class TestSplitPatterns : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void patterns_are_known_by_their_exact_spelling() {
        for (SplitPattern p : {SplitPattern::Gpt2, SplitPattern::Bloom, SplitPattern::Llama3, SplitPattern::Qwen2})
            QCOMPARE(lorascope::tokenizer::split_pattern_from_regex(lorascope::tokenizer::split_pattern_regex(p)), std::optional(p));
        // One character off is another pattern: refused, not approximated.
        std::string near = lorascope::tokenizer::split_pattern_regex(SplitPattern::Llama3);
        near.replace(near.find("{1,3}"), 5, "{1,4}");
        QVERIFY(!lorascope::tokenizer::split_pattern_from_regex(near));
    }

    void one_megabyte_inputs_split_as_hugging_face_does() {
        const json stress = read_split_stress();
        if (stress.is_null()) QFAIL("oracle record split_stress.json missing (run the oracle_tokenizers step)");
        int checked = 0;
        for (const json& c : stress["cases"]) {
            const std::string text = repeat(c["unit"].get<std::string>(), c["repeat"].get<size_t>());
            QVERIFY(text.size() >= (1u << 20));
            for (const auto& [name, pattern] : {std::pair("llama3", SplitPattern::Llama3), std::pair("qwen2", SplitPattern::Qwen2)}) {
                std::vector<std::string> pieces;
                lorascope::tokenizer::split_isolated(text, pattern, pieces);
                const json& want = c["pieces"][name];
                const std::string what = name + std::string(" on ") + c["unit"].dump() + " x " + c["repeat"].dump();
                QVERIFY2(pieces.size() == want["count"].get<size_t>(),
                         qPrintable(QString::fromStdString(what + ": " + std::to_string(pieces.size()) + " pieces, HF " + want["count"].dump())));
                const std::vector<std::string> first(pieces.begin(), pieces.begin() + std::min<size_t>(3, pieces.size()));
                const std::vector<std::string> last(pieces.end() - std::min<long>(3, static_cast<long>(pieces.size())), pieces.end());
                QVERIFY2(first == want["first"].get<std::vector<std::string>>() && last == want["last"].get<std::vector<std::string>>(),
                         qPrintable(QString::fromStdString(what + ": first or last pieces differ")));
                QVERIFY2(joined(pieces) == text, qPrintable(QString::fromStdString(what + ": pieces do not rebuild the input")));
                ++checked;
            }
            // The older patterns are checked against HF on the corpus; here they must finish and rebuild the input.
            for (SplitPattern p : {SplitPattern::Gpt2, SplitPattern::Bloom}) {
                std::vector<std::string> pieces;
                lorascope::tokenizer::split_isolated(text, p, pieces);
                QVERIFY(!pieces.empty() && joined(pieces) == text);
            }
        }
        QVERIFY(checked >= 24);
    }

    void whole_tokenizers_finish_one_megabyte_inputs() {
        std::vector<std::string> dirs;
        for (const char* name : {"llama3_style", "qwen2_style", "mt5_json", "nllb_json", "marian"}) {
            const json record = lorascope::test::read_tokenizer_record(name);
            if (record.is_null()) QFAIL(qPrintable(QString("oracle record %1 missing").arg(name)));
            dirs.push_back(record["dir"].get<std::string>());
        }
        const std::string shared = lorascope::test::shared_tokenizers() + "/mistral";
        const json mistral = lorascope::test::read_tokenizer_record("mistral_v1_json");
        if (lorascope::test::exists(shared) && !mistral.is_null()) dirs.push_back(mistral["dir"].get<std::string>());
        for (const std::string& dir : dirs) {
            const auto tok = lorascope::load_tokenizer(dir);
            for (const std::string& unit : {std::string("a"), std::string("1"), std::string(" "), std::string("a1 !\n\xE2\x82\xAC")}) {
                const std::string text = repeat(unit, (1u << 20) / unit.size());
                const auto ids = tok->encode(text, false);
                if (unit == " ") continue;  // SentencePiece strips it all away
                QVERIFY(!ids.empty());
                for (int64_t id : {ids.front(), ids.back()}) QVERIFY(id >= 0 && id < tok->vocab_size());
                // Byte-level BPE loses nothing: the text comes back whole (as clean-up leaves it).
                if (tok->kind() == lorascope::TokenizerKind::ByteLevelBpe)
                    QVERIFY(tok->decode(ids) == (tok->clean_up_tokenization_spaces() ? lorascope::Tokenizer::clean_up_tokenization(text) : text));
            }
        }
        if (!lorascope::test::exists(shared))
            LORASCOPE_SKIP_SHARED("shared tokenizer folder absent: Mistral's one-word BPE was not fed the inputs");
    }
};

LORASCOPE_QTEST_APPLESS_MAIN(TestSplitPatterns)
#include "test_split_patterns.moc"
