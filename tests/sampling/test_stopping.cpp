// Stopping: eos, max_new_tokens, and stop sequences matched as transformers' StopStringCriteria
// does (on the tokens' own strings, across token boundaries) with the matched text excluded and
// partial matches held back (never retracted).
#include <QtTest/QtTest>

#include <random>

#include "lorascope/params.h"
#include "sampling/stopping.h"

using namespace lorascope;
using namespace lorascope::sampling;

namespace {

ResolvedGenerationParams params_with(std::vector<std::string> stop, bool ignore_eos = false) {
    GenerationConfig config;
    config.eos_token_ids = {2};
    GenerationParams p;
    p.stop = std::move(stop);
    p.ignore_eos = ignore_eos;
    return resolve(p, config);
}

struct Outcome {
    std::string text;
    StopReason reason = StopReason::None;
    int64_t tokens = 0;
};

// Feeds token pieces (token ids 10, 11, ...; `eos_at` gets id 2) and collects what is released.
Outcome feed(const ResolvedGenerationParams& params, const std::vector<std::string>& pieces, int64_t max_new,
             int64_t eos_at = -1) {
    StoppingCriteria criteria(params, max_new);
    Outcome out;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const int64_t id = static_cast<int64_t>(i) == eos_at ? 2 : 10 + static_cast<int64_t>(i);
        StoppingCriteria::Step step = criteria.push(id, pieces[i], pieces[i]);   // delta == the token's piece
        out.text += step.text;
        ++out.tokens;
        if (step.reason != StopReason::None) {
            out.reason = step.reason;
            break;
        }
    }
    if (out.reason == StopReason::None) out.text += criteria.flush();
    if (out.text != criteria.text()) out.text = "criteria.text() disagrees: " + criteria.text();
    return out;
}

// The obvious definition: stop at the first token after which some stop sequence occurs in the
// text, cut at its earliest occurrence.
Outcome reference(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
    std::string text;
    Outcome out;
    for (const std::string& piece : pieces) {
        text += piece;
        ++out.tokens;
        size_t first = std::string::npos;
        for (const std::string& s : stops) first = std::min(first, text.find(s));
        if (first != std::string::npos) {
            out.text = text.substr(0, first);
            out.reason = StopReason::Stop;
            return out;
        }
    }
    out.text = text;
    return out;
}

}  // namespace

class TestStopping : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void stopSequenceAcrossTokens() {
        const auto params = params_with({"\nUser:"});
        const Outcome out = feed(params, {"Hello", " there", "\n", "Us", "er", ": more"}, 100);
        QCOMPARE(out.text, std::string("Hello there"));
        QVERIFY(out.reason == StopReason::Stop);
        QCOMPARE(out.tokens, int64_t(6));
    }

    void partialMatchIsHeldThenReleased() {
        StoppingCriteria criteria(params_with({"END"}), 100);
        QCOMPARE(criteria.push(10, "the E", "the E").text, std::string("the "));   // "E" may start "END"
        QCOMPARE(criteria.push(11, "N", "N").text, std::string());              // "EN" still may
        const StoppingCriteria::Step step = criteria.push(12, "D?", "D?");        // "END" completes
        QCOMPARE(step.text, std::string());
        QVERIFY(step.reason == StopReason::Stop);
        QCOMPARE(criteria.text(), std::string("the "));

        StoppingCriteria other(params_with({"END"}), 100);
        QCOMPARE(other.push(10, "the E", "the E").text, std::string("the "));
        QCOMPARE(other.push(11, "NX", "NX").text, std::string("ENX"));            // no longer a match
        QVERIFY(other.reason() == StopReason::None);
    }

    void heldTextReleasedOnEosAndLength() {
        Outcome out = feed(params_with({"###"}), {"a", "#", "#", "</s>"}, 100, /*eos_at=*/3);
        QVERIFY(out.reason == StopReason::Eos);
        QCOMPARE(out.text, std::string("a##</s>"));
        out = feed(params_with({"###"}), {"a", "#", "#"}, 3);
        QVERIFY(out.reason == StopReason::Length);
        QCOMPARE(out.text, std::string("a##"));
    }

    void earliestMatchWins() {
        // "b" completes inside a text that could still grow into "abcdef": stop at once, at "b".
        Outcome out = feed(params_with({"abcdef", "b"}), {"xa", "bc"}, 100);
        QCOMPARE(out.text, std::string("xa"));
        // Two stop sequences complete in one delta: cut at the one that starts first.
        out = feed(params_with({"cd", "bcde"}), {"a", "bcdef"}, 100);
        QCOMPARE(out.text, std::string("a"));
        QVERIFY(out.reason == StopReason::Stop);
    }

    void multibyteStopSequence() {
        // "é" as one token: the text and the token's piece both show it; the match holds.
        Outcome out = feed(params_with({"caf\xC3\xA9!"}), {"un caf", "\xC3\xA9", "!", " ok"}, 100);
        QCOMPARE(out.text, std::string("un "));
        QVERIFY(out.reason == StopReason::Stop);
        // Its two bytes as two tokens: the detokenizer holds the first byte back and then releases
        // "é", but each token's own piece is U+FFFD, so transformers' StopStringCriteria never
        // matches, and neither do we; the text is released whole.
        const std::string fffd = "\xEF\xBF\xBD";
        StoppingCriteria criteria(params_with({"caf\xC3\xA9"}), 100);
        std::string text = criteria.push(10, "un caf", "un caf").text;
        QCOMPARE(text, std::string("un "));                               // "caf" may start the stop
        text += criteria.push(11, "", fffd).text;                         // 0xC3 held by the detokenizer
        const StoppingCriteria::Step step = criteria.push(12, "\xC3\xA9", fffd);
        text += step.text;
        QVERIFY(step.reason == StopReason::None);
        QCOMPARE(text, std::string("un caf\xC3\xA9"));
        // A stop string may begin in the context (the prompt) and end in the first token.
        StoppingCriteria with_context(params_with({"ab"}), 100);
        with_context.add_context("xa");
        const StoppingCriteria::Step first = with_context.push(10, "bc", "bc");
        QVERIFY(first.reason == StopReason::Stop);
        QCOMPARE(first.text, std::string("bc"));   // the text never showed the stop's start
    }

    void eosUnlessIgnored() {
        Outcome out = feed(params_with({}), {"a", "b", "", "c"}, 100, /*eos_at=*/2);
        QVERIFY(out.reason == StopReason::Eos);
        QCOMPARE(out.tokens, int64_t(3));
        out = feed(params_with({}, /*ignore_eos=*/true), {"a", "b", "", "c", "d"}, 4, /*eos_at=*/2);
        QVERIFY(out.reason == StopReason::Length);
        QCOMPARE(out.tokens, int64_t(4));
        QCOMPARE(out.text, std::string("abc"));
    }

    void eosOnTheLastAllowedTokenIsEos() {
        const Outcome out = feed(params_with({}), {"a", ""}, 2, /*eos_at=*/1);
        QVERIFY(out.reason == StopReason::Eos);
    }

    void nothingAfterFinish() {
        StoppingCriteria criteria(params_with({}), 1);
        QVERIFY(criteria.push(10, "a", "a").reason == StopReason::Length);
        const StoppingCriteria::Step after = criteria.push(11, "b", "b");
        QVERIFY(after.reason == StopReason::None);
        QVERIFY(after.text.empty());
        QCOMPARE(criteria.generated(), int64_t(1));
    }

    // Random pieces over a tiny alphabet so that partial and overlapping matches are frequent.
    void randomAgainstReference() {
        std::mt19937 rng(12345);
        const std::string alphabet = "ab\n";
        auto random_string = [&](size_t min_len, size_t max_len) {
            std::string s;
            const size_t len = min_len + rng() % (max_len - min_len + 1);
            for (size_t i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
            return s;
        };
        int stopped = 0;
        for (int trial = 0; trial < 3000; ++trial) {
            std::vector<std::string> stops;
            const int n_stops = 1 + static_cast<int>(rng() % 3);
            for (int i = 0; i < n_stops; ++i) stops.push_back(random_string(1, 5));
            std::vector<std::string> pieces;
            const int n_pieces = 1 + static_cast<int>(rng() % 12);
            for (int i = 0; i < n_pieces; ++i) pieces.push_back(random_string(0, 4));
            const auto params = params_with(stops);
            const Outcome ours = feed(params, pieces, 1000);
            const Outcome want = reference(stops, pieces);
            QCOMPARE(ours.text, want.text);
            QVERIFY(ours.reason == want.reason);
            QCOMPARE(ours.tokens, want.tokens);
            stopped += want.reason == StopReason::Stop;

            // Never holds back more than a stop sequence could still need.
            size_t longest = 0;
            for (const auto& s : stops) longest = std::max(longest, s.size());
            StopSequenceMatcher matcher(stops);
            for (const auto& piece : pieces) {
                if (matcher.push(piece, piece).matched) break;
                QVERIFY(matcher.held().size() < longest);
            }
        }
        QVERIFY(stopped > 500);   // the generator exercises both outcomes
    }
};

QTEST_APPLESS_MAIN(TestStopping)
#include "test_stopping.moc"
