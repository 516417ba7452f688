// Tokens forced at the start of an encoder-decoder's decoder (Request::decoder_prefix_ids, a fork of
// an encoder-decoder request, issue 32) against Hugging Face + PEFT's
// generate(..., decoder_input_ids=[start] + prefix) (tests/oracle/decoder_prefix_oracle.py) on the
// tiny T5 and BART with and without adapters: greedy, with processors that read the prefix, and
// seeded sampling; the new tokens identical, their log-probabilities and alternatives within 1e-5,
// all cases of a base in one mixed batch and each one alone. A prefix is input: not streamed, not
// in the output. Decoder-only models refuse one (their prompt takes those tokens).
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

#include "../lora/lora_records.h"
#include "collecting_sink.h"
#include "engine_test_support.h"
#include "inspect_records.h"
#include "lorascope/engine.h"
#include "lorascope/params.h"
#include "test_env.h"

using lorascope::FinishEvent;
using lorascope::FinishReason;
using lorascope::Request;
using lorascope::test::CollectingSink;
using json = nlohmann::json;

namespace {

json load_records() {
    const std::string path = lorascope::test::oracle_dir() + "/decoder_prefix/records.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing oracle records " + path + " (run the oracle_decoder_prefix step)");
    json j;
    in >> j;
    return j;
}

Request request_for(const lorascope::test::LoraBase& base, const json& c) {
    Request r;
    r.input_ids = base.records["prompts"][c["prompt_index"].get<size_t>()].get<std::vector<int64_t>>();
    r.params = lorascope::parse_generation_params(c["params"].dump(), "decoder prefix records");
    r.adapter = c["adapter"].get<std::string>();
    r.decoder_prefix_ids = c["decoder_prefix_ids"].get<std::vector<int64_t>>();
    return r;
}

std::string describe(const json& c) {
    return c["base"].get<std::string>() + " adapter '" + c["adapter"].get<std::string>() + "' prompt " +
           std::to_string(c["prompt_index"].get<int>()) + " prefix " + c["decoder_prefix_ids"].dump() + " " +
           c["params"].dump();
}

// "" when the finish is HF's, else what differs first.
std::string compare(const json& c, const CollectingSink::Record& rec) {
    if (rec.finishes.size() != 1) return "no finish";
    const FinishEvent& f = rec.finishes[0];
    if (f.reason == FinishReason::Error) return f.error;
    if (f.token_ids != c["tokens"].get<std::vector<int64_t>>())
        return "tokens " + json(f.token_ids).dump() + ", HF " + c["tokens"].dump();
    const double temperature = lorascope::test::sampling_temperature(c["params"]);
    if (auto d = lorascope::test::compare_logprobs(f.logprobs, c["logprobs"], temperature); !d.empty()) return d;
    if (auto d = lorascope::test::compare_alternatives(f.alternatives, c["alternatives"], temperature); !d.empty()) return d;
    // The prefix is input: only the new tokens stream.
    if (rec.tokens.size() != f.token_ids.size()) return "streamed " + std::to_string(rec.tokens.size()) + " tokens";
    if (f.usage.generated_tokens != static_cast<int64_t>(f.token_ids.size())) return "generated_tokens counts the prefix";
    return {};
}

}  // namespace

class TestEngineDecoderPrefix : public QObject {
    Q_OBJECT
    json records_;

private Q_SLOTS:
    void initTestCase() { records_ = load_records(); }
    void cleanupTestCase() {
        const auto& d = lorascope::test::deviation();
        qInfo("largest deviation from HF over %lld log-probabilities: %.3g absolute, %.3g relative",
              static_cast<long long>(d.compared), d.absolute, d.relative);
    }

    void forced_decoder_prefixes_match_hf_batched_and_alone() {
        int compared = 0, differs_from_unforced = 0;
        for (const std::string name : {"t5", "bart"}) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = lorascope::test::make_engine(base.model_dir);
            for (const auto& a : base.adapter_names()) engine->load_adapter(a, base.adapter_dir(a));
            std::vector<const json*> cases;
            for (const json& c : records_["cases"])
                if (c["base"] == name) cases.push_back(&c);
            QVERIFY(cases.size() >= 27);   // 3 adapters x 3 prompts x 3 settings
            // All at once: one mixed batch of adapters, settings and prefix lengths, beside
            // requests without a prefix.
            auto sink = std::make_shared<CollectingSink>();
            std::vector<lorascope::RequestId> ids, plain;
            for (const json* c : cases) {
                ids.push_back(engine->submit(request_for(base, *c), sink));
                Request r = request_for(base, *c);
                r.decoder_prefix_ids.clear();
                plain.push_back(engine->submit(std::move(r), sink));
            }
            QVERIFY(sink->wait_finished(2 * cases.size()));
            for (size_t i = 0; i < cases.size(); ++i) {
                const auto rec = sink->get(ids[i]);
                const std::string diff = compare(*cases[i], rec);
                QVERIFY2(diff.empty(), (describe(*cases[i]) + ": " + diff).c_str());
                differs_from_unforced += sink->get(plain[i]).finishes.at(0).token_ids != rec.finishes[0].token_ids;
                ++compared;
            }
            // Alone: the same.
            for (size_t i = 0; i < cases.size(); i += 4) {
                auto alone = std::make_shared<CollectingSink>();
                const auto id = engine->submit(request_for(base, *cases[i]), alone);
                QVERIFY(alone->wait_until(id));
                const std::string diff = compare(*cases[i], alone->get(id));
                QVERIFY2(diff.empty(), ("alone: " + describe(*cases[i]) + ": " + diff).c_str());
            }
        }
        QVERIFY(compared >= 54);
        QVERIFY(differs_from_unforced * 2 >= compared);   // the prefix steers what follows
    }

    void decoder_only_models_refuse_a_decoder_prefix() {
        const auto bloom = lorascope::test::load_lora_base("bloom");
        auto engine = lorascope::test::make_engine(bloom.model_dir);
        Request r;
        r.input_ids = bloom.records["prompts"][0].get<std::vector<int64_t>>();
        r.params.max_new_tokens = 2;
        r.decoder_prefix_ids = {5};
        auto sink = std::make_shared<CollectingSink>();
        const auto id = engine->submit(std::move(r), sink);
        QVERIFY(sink->wait_until(id));
        const FinishEvent f = sink->get(id).finishes.at(0);
        QCOMPARE(f.reason, FinishReason::Error);
        QVERIFY2(f.error.find("encoder-decoder") != std::string::npos, f.error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestEngineDecoderPrefix)
#include "test_engine_decoder_prefix.moc"
