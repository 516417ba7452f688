// Request parameters: JSON parsing, validation messages, and resolution against
// generation_config.json with the precedence of transformers and length rules.
#include <QtTest/QtTest>

#include <tuple>

#include "lorascope/error.h"
#include "lorascope/params.h"

using namespace lorascope;

namespace {

// The message of the InvalidArgument error `fn` throws; fails the test when it does not throw one.
template <typename Fn>
std::string invalid_argument_message(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidArgument) return "wrong kind: " + std::string(e.what());
        return e.what();
    }
    return "no error";
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

class TestGenerationParams : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesEveryField() {
        const GenerationParams p = parse_generation_params(
            R"({"max_new_tokens": 12, "min_new_tokens": 2, "do_sample": true, "temperature": 0.7, "top_k": 5,)"
            R"( "top_p": 0.9, "typical_p": 0.95, "min_p": 0.05, "repetition_penalty": 1.2,)"
            R"( "no_repeat_ngram_size": 3, "num_beams": 4, "length_penalty": 2, "early_stopping": "never",)"
            R"( "stop": ["\n\n", "END"], "seed": 18446744073709551615, "ignore_eos": true, "logprobs": true})");
        QCOMPARE(*p.max_new_tokens, int64_t(12));
        QCOMPARE(*p.min_new_tokens, int64_t(2));
        QVERIFY(*p.do_sample);
        QCOMPARE(*p.temperature, 0.7);
        QCOMPARE(*p.top_k, int64_t(5));
        QCOMPARE(*p.top_p, 0.9);
        QCOMPARE(*p.typical_p, 0.95);
        QCOMPARE(*p.min_p, 0.05);
        QCOMPARE(*p.repetition_penalty, 1.2);
        QCOMPARE(*p.no_repeat_ngram_size, int64_t(3));
        QCOMPARE(*p.num_beams, int64_t(4));
        QCOMPARE(*p.length_penalty, 2.0);   // an integer is a fine number
        QVERIFY(*p.early_stopping == EarlyStopping::Never);
        QVERIFY((*p.stop == std::vector<std::string>{"\n\n", "END"}));
        QCOMPARE(*p.seed, UINT64_MAX);
        QVERIFY(*p.ignore_eos);
        QVERIFY(*p.logprobs);
    }

    void absentAndNullMeanUnspecified() {
        const GenerationParams p = parse_generation_params(R"({"top_p": null, "stop": "@@@"})");
        QVERIFY(!p.top_p);
        QVERIFY(!p.max_new_tokens);
        QVERIFY((*p.stop == std::vector<std::string>{"@@@"}));   // one string is a list of one
        QVERIFY(!parse_generation_params("{}").temperature);
    }

    void rejectsWithMessagesNamingTheField_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown field") << R"({"temprature": 0.5})" << "unknown parameter 'temprature'";
        QTest::newRow("control byte in field") << R"({"top\u0001p": 0.5})" << R"(unknown parameter '"top\u0001p"')";
        QTest::newRow("top_p zero") << R"({"top_p": 0})" << "top_p must be in (0, 1]";
        QTest::newRow("top_p above one") << R"({"top_p": 1.5})" << "top_p must be in (0, 1]";
        QTest::newRow("negative max_new_tokens") << R"({"max_new_tokens": -3})" << "max_new_tokens must be at least 1";
        QTest::newRow("zero max_new_tokens") << R"({"max_new_tokens": 0})" << "max_new_tokens must be at least 1";
        QTest::newRow("negative min_new_tokens") << R"({"min_new_tokens": -1})" << "min_new_tokens must be 0 or more";
        QTest::newRow("num_beams zero") << R"({"num_beams": 0})" << "num_beams must be at least 1";
        QTest::newRow("negative top_k") << R"({"top_k": -1})" << "top_k must be 0 or more";
        QTest::newRow("typical_p zero") << R"({"typical_p": 0})" << "typical_p must be in (0, 1]";
        QTest::newRow("min_p above one") << R"({"min_p": 1.5})" << "min_p must be in [0, 1]";
        QTest::newRow("repetition_penalty zero") << R"({"repetition_penalty": 0})" << "repetition_penalty must be greater than 0";
        QTest::newRow("negative ngram") << R"({"no_repeat_ngram_size": -2})" << "no_repeat_ngram_size must be 0 or more";
        QTest::newRow("negative temperature") << R"({"temperature": -1})" << "temperature must be greater than 0";
        QTest::newRow("negative seed") << R"({"seed": -1})" << "seed must be 0 or more";
        QTest::newRow("string for int") << R"({"max_new_tokens": "12"})" << "parameter 'max_new_tokens' must be an integer, got a string";
        QTest::newRow("fraction for int") << R"({"top_k": 2.5})" << "parameter 'top_k' must be an integer, got a number";
        QTest::newRow("string for float") << R"({"top_p": "high"})" << "parameter 'top_p' must be a number";
        QTest::newRow("number for bool") << R"({"do_sample": 1})" << "parameter 'do_sample' must be true or false";
        QTest::newRow("bad early_stopping") << R"({"early_stopping": "sometimes"})" << "parameter 'early_stopping' must be true, false or \"never\"";
        QTest::newRow("numbers in stop") << R"({"stop": [1, 2]})" << "parameter 'stop' must be a list of strings";
        QTest::newRow("empty stop") << R"({"stop": [""]})" << "stop sequences must not be empty";
        QTest::newRow("not an object") << R"([1, 2])" << "params must be a JSON object";
        QTest::newRow("not JSON") << R"({"top_p": )" << "params are not valid JSON";
        // Ranges where the sampler's float32 arithmetic stays finite (issue 26: 1e-39 made the
        // logits infinite and failed every request of the batch).
        QTest::newRow("tiny temperature") << R"({"temperature": 1e-39})" << "temperature must be in [0.0001, 10000]";
        QTest::newRow("huge temperature") << R"({"temperature": 1e300})" << "temperature must be in [0.0001, 10000]";
        QTest::newRow("tiny repetition_penalty") << R"({"repetition_penalty": 1e-300})" << "repetition_penalty must be in [0.0001, 10000]";
        QTest::newRow("huge repetition_penalty") << R"({"repetition_penalty": 1e30})" << "repetition_penalty must be in [0.0001, 10000]";
        QTest::newRow("huge length_penalty") << R"({"length_penalty": 400})" << "length_penalty must be in [-10, 10]";
        QTest::newRow("too many stops") << R"({"stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})"
                                        << "stop holds 17 sequences; at most 16";
        QTest::newRow("long stop") << (R"({"stop": [")" + QString(129, 'x') + R"("]})") << "a stop sequence of 129 bytes";
        QTest::newRow("deep JSON") << (R"({"stop": )" + QString(65, '[') + QString(65, ']') + "}") << "nested deeper than 64";
        QTest::newRow("big JSON") << (R"({"stop": [")" + QString(70000, 'x') + R"("]})") << "more than the 65536 allowed";
        QTest::newRow("huge value quoted briefly") << (R"({"top_k": [)" + QString("1,").repeated(5000) + "1]}")
                                                   << "must be an integer, got a list ([1,1,1,";
    }
    void rejectsWithMessagesNamingTheField() {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        const std::string message = invalid_argument_message([&] { parse_generation_params(json.toStdString(), "request r7"); });
        QVERIFY2(contains(message, expected.toStdString()), message.c_str());
        QVERIFY2(contains(message, "request r7: "), message.c_str());
        QVERIFY2(message.size() < 400, message.c_str());   // a message never echoes a whole request
    }

    // The boundaries themselves are accepted; the same rules hold for parameters built in code.
    void boundsAreInclusive() {
        const GenerationParams p = parse_generation_params(
            R"({"temperature": 0.0001, "repetition_penalty": 10000, "length_penalty": -10, "stop": [")" +
            std::string(128, 'x') + R"("]})");
        QCOMPARE(*p.temperature, 0.0001);
        GenerationParams built;
        built.temperature = 5e-5;
        QVERIFY(contains(invalid_argument_message([&] { check_generation_params(built, "dialect"); }), "dialect: temperature"));
        built.temperature = 0.0;   // greedy decoding ignores it
        check_generation_params(built);
    }

    // A request's rows and lengths against the engine's limits, in checked arithmetic: the value
    // that once wrapped the KV block count negative is refused with a message.
    void requestBudget() {
        RequestBudget budget;
        budget.max_batch_tokens = 100;
        budget.max_batch_size = 4;
        check_request_budget(1, 60, 40, budget);
        check_request_budget(2, 20, 30, budget);
        const std::vector<std::tuple<int64_t, int64_t, int64_t, const char*>> refused = {
            {1, 61, 40, "max_batch_tokens (100)"},
            {1, 5, INT64_MAX, "max_batch_tokens (100)"},
            {1, INT64_MAX, INT64_MAX, "max_batch_tokens (100)"},
            {3, 20, 20, "times 3 rows"},
            {5, 1, 1, "max_batch_size (4)"},
            {INT64_MAX, 1, 1, "max_batch_size (4)"},
            {1, -1, 5, "no negative length"},
        };
        for (const auto& [rows, prompt, max_new, needle] : refused) {
            const std::string m = invalid_argument_message([&] { check_request_budget(rows, prompt, max_new, budget); });
            QVERIFY2(contains(m, needle), m.c_str());
        }
        budget.max_batch_tokens = INT64_MAX;
        budget.context_tokens = 1024;   // BART: encoder and decoder positions each
        check_request_budget(1, 1024, 1023, budget);
        QVERIFY(contains(invalid_argument_message([&] { check_request_budget(1, 1025, 1, budget); }), "1024 positions"));
        QVERIFY(contains(invalid_argument_message([&] { check_request_budget(1, 1, 1024, budget); }), "decoder start"));
        budget.encoder_decoder = false;
        QVERIFY(contains(invalid_argument_message([&] { check_request_budget(1, 1000, 25, budget); }), "1024 positions"));
        QVERIFY(contains(invalid_argument_message([&] { check_request_budget(1, 1000, INT64_MAX, budget); }), "1024 positions"));
    }

    void resolutionRejectsCombinations() {
        GenerationConfig config;
        auto message = invalid_argument_message([&] {
            resolve(parse_generation_params(R"({"do_sample": true, "temperature": 0})"), config);
        });
        QVERIFY2(contains(message, "temperature must be greater than 0 when do_sample is true"), message.c_str());
        // Temperature 0 is harmless for greedy decoding, as in transformers.
        resolve(parse_generation_params(R"({"temperature": 0})"), config);

        message = invalid_argument_message([&] {
            resolve(parse_generation_params(R"({"min_new_tokens": 9, "max_new_tokens": 3})"), config);
        });
        QVERIFY2(contains(message, "min_new_tokens (9) is larger than max_new_tokens (3)"), message.c_str());

        // num_return_sequences: refused where transformers refuses it, and with stops (not matched per row).
        for (const auto& [params, expected] : std::vector<std::pair<const char*, const char*>>{
                 {R"({"num_return_sequences": 2})", "needs beam search"},
                 {R"({"num_beams": 2, "num_return_sequences": 3})", "must be at most num_beams (2)"},
                 {R"({"do_sample": true, "num_return_sequences": 2, "stop": ["x"]})", "not supported with num_return_sequences"},
                 {R"({"num_return_sequences": 0})", "num_return_sequences must be at least 1"}}) {
            message = invalid_argument_message([&] { resolve(parse_generation_params(params), config); });
            QVERIFY2(contains(message, expected), (std::string(params) + ": " + message).c_str());
        }
        QCOMPARE(resolve(parse_generation_params(R"({"do_sample": true, "num_return_sequences": 3})"), config).num_return_sequences,
                 int64_t(3));

        // A bad generation_config.json is reported like a bad request.
        GenerationConfig bad;
        bad.top_p = 0;
        message = invalid_argument_message([&] { resolve(GenerationParams{}, bad); });
        QVERIFY2(contains(message, "top_p must be in (0, 1]"), message.c_str());
    }

    void requestThenGenerationConfigThenDefaults() {
        GenerationConfig config;
        config.do_sample = true;
        config.temperature = 0.6;
        config.top_p = 0.8;
        config.repetition_penalty = 1.1;
        config.eos_token_ids = {2, 9};
        config.forced_eos_token_id = 2;
        config.early_stopping = true;
        const ResolvedGenerationParams r = resolve(parse_generation_params(R"({"top_p": 0.5, "stop": ["x"]})"), config);
        QCOMPARE(r.top_p, 0.5);            // request
        QCOMPARE(r.temperature, 0.6);      // generation_config.json
        QVERIFY(r.do_sample);
        QCOMPARE(r.repetition_penalty, 1.1);
        QCOMPARE(r.top_k, int64_t(50));    // Hugging Face's default
        QVERIFY(!r.min_p);
        QCOMPARE(r.num_beams, int64_t(1));
        QVERIFY(r.early_stopping == EarlyStopping::True);
        QVERIFY((r.eos_token_ids == std::vector<int64_t>{2, 9}));
        QCOMPARE(*r.forced_eos_token_id, int64_t(2));
        QVERIFY(!r.ignore_eos);
        QVERIFY(!r.logprobs);
        QVERIFY((r.stop == std::vector<std::string>{"x"}));
    }

    // transformers: max_new_tokens wins; else max_length (default 20) counts the input ids, which
    // for encoder-decoder models are just the decoder start token.
    void lengthDerivation() {
        GenerationConfig config;
        const ResolvedGenerationParams defaults = resolve(GenerationParams{}, config);
        QCOMPARE(defaults.max_new_tokens_for(1), int64_t(19));
        QCOMPARE(defaults.max_new_tokens_for(6), int64_t(14));
        const std::string message = invalid_argument_message([&] { defaults.max_new_tokens_for(20); });
        QVERIFY2(contains(message, "set max_new_tokens"), message.c_str());

        config.max_length = 64;
        config.min_length = 10;
        const ResolvedGenerationParams from_config = resolve(GenerationParams{}, config);
        QCOMPARE(from_config.max_new_tokens_for(4), int64_t(60));
        QCOMPARE(from_config.min_new_tokens_for(4), int64_t(6));
        QCOMPARE(from_config.min_new_tokens_for(12), int64_t(0));

        config.max_new_tokens = 7;
        QCOMPARE(resolve(GenerationParams{}, config).max_new_tokens_for(100), int64_t(7));
        const ResolvedGenerationParams request = resolve(parse_generation_params(R"({"max_new_tokens": 3, "min_new_tokens": 2})"), config);
        QCOMPARE(request.max_new_tokens_for(100), int64_t(3));
        QCOMPARE(request.min_new_tokens_for(100), int64_t(2));
    }
};

QTEST_APPLESS_MAIN(TestGenerationParams)
#include "test_generation_params.moc"
