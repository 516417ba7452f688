// The published configurations of opus-mt-en-de, mbart-large-50-many-to-many-mmt,
// nllb-200-distilled-600M and pegasus-xsum (issue 30), written by
// tests/oracle/published_configs_oracle.py as those repositories publish them, full size with random
// weights: every key read as Hugging Face reads it, and generate() with no request parameters but
// one (max_new_tokens, the cap the oracle's docstring explains) equal to HF's: the published beams,
// length penalty, early stopping, forced eos, bad_words_ids, renormalize_logits and decoder start.
//
// CTest builds and checks all four (costs measured in tests/models/CMakeLists.txt); the test checks
// every model the oracle step built (its index.json).
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "../engine/collecting_sink.h"
#include "../engine/engine_test_support.h"
#include "lorascope/config.h"
#include "lorascope/engine.h"
#include "test_env.h"

using json = nlohmann::json;
using lorascope::test::CollectingSink;

namespace {

// The models the oracle step built (its index.json): all four in CTest, those named with --only otherwise.
std::vector<std::string> published_models() {
    std::ifstream in(lorascope::test::oracle_dir() + "/published/index.json");
    if (!in) throw std::runtime_error("missing published/index.json (run the oracle_published_configs step)");
    json index;
    in >> index;
    const auto built = index["built"].get<std::vector<std::string>>();
    if (std::find(built.begin(), built.end(), "opus_mt_en_de") == built.end())
        throw std::runtime_error("the oracle_published_configs step did not build opus_mt_en_de");
    return built;
}

json records_of(const std::string& name, std::string& dir) {
    auto v = lorascope::test::load_oracle_model("published", name, "oracle_published_configs");
    dir = v.dir;
    return v.records;
}

json optional_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

// What the engine read, under HF's names (the oracle's CONFIG_KEYS and GENERATION_KEYS).
json engine_config(const lorascope::ModelConfig& m) {
    const auto& c = m.bart();
    return {{"vocab_size", c.vocab_size}, {"d_model", c.d_model}, {"encoder_layers", c.encoder_layers},
            {"decoder_layers", c.decoder_layers}, {"encoder_attention_heads", c.encoder_attention_heads},
            {"decoder_attention_heads", c.decoder_attention_heads}, {"encoder_ffn_dim", c.encoder_ffn_dim},
            {"decoder_ffn_dim", c.decoder_ffn_dim}, {"activation_function", c.activation_function},
            {"max_position_embeddings", c.max_position_embeddings}, {"scale_embedding", c.scale_embedding},
            {"pad_token_id", c.pad_token_id}, {"eos_token_id", c.eos_token_id}, {"bos_token_id", optional_json(c.bos_token_id)},
            {"decoder_start_token_id", optional_json(c.decoder_start_token_id)},
            {"tie_word_embeddings", c.tie_word_embeddings}};
}

json engine_generation(const lorascope::GenerationConfig& g) {
    json eos = g.eos_token_ids.size() == 1 ? json(g.eos_token_ids[0]) : json(g.eos_token_ids);
    return {{"max_length", optional_json(g.max_length)}, {"num_beams", g.num_beams},
            {"length_penalty", g.length_penalty}, {"early_stopping", g.early_stopping},
            {"forced_bos_token_id", optional_json(g.forced_bos_token_id)},
            {"forced_eos_token_id", optional_json(g.forced_eos_token_id)},
            {"bad_words_ids", g.bad_words_ids.empty() ? json(nullptr) : json(g.bad_words_ids)},
            {"renormalize_logits", g.renormalize_logits}, {"decoder_start_token_id", optional_json(g.decoder_start_token_id)},
            {"eos_token_id", eos}, {"no_repeat_ngram_size", g.no_repeat_ngram_size}, {"min_length", g.min_length},
            {"do_sample", g.do_sample}};
}

}  // namespace

class TestPublishedConfigs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void every_key_is_read_as_hf_reads_it() {
        for (const std::string& name : published_models()) {
            std::string dir;
            const json r = records_of(name, dir);
            const auto model = lorascope::load_model_config(dir);
            const auto generation = lorascope::load_generation_config(dir, model);
            const json ours_config = engine_config(model), ours_generation = engine_generation(generation);
            for (const auto& [key, hf] : r["hf"]["config"].items())
                QVERIFY2(ours_config.at(key) == hf, qPrintable(QString::fromStdString(
                    name + " config.json " + key + ": ours " + ours_config.at(key).dump() + ", HF " + hf.dump())));
            for (const auto& [key, hf] : r["hf"]["generation"].items()) {
                // HF keeps a float where the file wrote one (1.0); ours is a double either way.
                const bool same = hf.is_number() ? ours_generation.at(key).get<double>() == hf.get<double>()
                                                 : ours_generation.at(key) == hf;
                QVERIFY2(same, qPrintable(QString::fromStdString(name + " generation_config.json " + key +
                                                                 ": ours " + ours_generation.at(key).dump() + ", HF " + hf.dump())));
            }
        }
    }

    void generate_with_the_published_defaults_equals_hf() {
        for (const std::string& name : published_models()) {
            std::string dir;
            const json r = records_of(name, dir);
            auto options = lorascope::test::engine_options(dir);
            options.threads = 2;
            auto engine = lorascope::Engine::create(options);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<lorascope::RequestId> ids;
            for (const json& prompt : r["prompts"])
                ids.push_back(engine->submit(lorascope::test::greedy_request(prompt, r["new"].get<int64_t>()), sink));
            QVERIFY(sink->wait_finished(ids.size(), std::chrono::seconds(1800)));
            for (size_t i = 0; i < ids.size(); ++i) {
                const auto f = sink->get(ids[i]).finishes.at(0);
                QVERIFY2(f.error.empty(), f.error.c_str());
                QVERIFY2(json(f.token_ids) == r["outputs"][i],
                         qPrintable(QString::fromStdString(name + " prompt " + std::to_string(i) + ": ours " +
                                                           json(f.token_ids).dump() + ", HF " + r["outputs"][i].dump())));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestPublishedConfigs)
#include "test_published_configs.moc"
