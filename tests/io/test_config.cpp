// config.json / generation_config.json against Hugging Face's own parse (config.to_dict() and the
// generation config a model would use), for every family, aliases, absent keys and saved models.
#include <QtTest>

#include "io_test_util.h"
#include "lorascope/config.h"

using namespace lorascope;
using nlohmann::json;

namespace {

// Compares one field; `hf` null means HF leaves it unset (for optional fields).
template <typename T>
void check_field(const std::string& where, const char* field, const T& ours, const json& hf_config) {
    const json hf = hf_config.contains(field) ? hf_config.at(field) : json();
    const std::string msg = where + ": field " + field + " ours=" + json(ours).dump() + " hf=" + hf.dump();
    if constexpr (std::is_same_v<T, double>) {
        QVERIFY2(hf.is_number() && hf.get<double>() == ours, msg.c_str());
    } else {
        QVERIFY2(!hf.is_null() && hf.get<T>() == ours, msg.c_str());
    }
}

template <typename T>
void check_optional(const std::string& where, const char* field, const std::optional<T>& ours, const json& hf_config) {
    const json hf = hf_config.contains(field) ? hf_config.at(field) : json();
    const std::string msg = where + ": field " + field + " ours=" + (ours ? json(*ours).dump() : "null") + " hf=" + hf.dump();
    if (!ours) {
        QVERIFY2(hf.is_null(), msg.c_str());
    } else {
        QVERIFY2(!hf.is_null() && hf.get<T>() == *ours, msg.c_str());
    }
}

// Keys HF only has when the file wrote them (fairseq-era BART flags): absent means false.
void check_flag_default_false(const std::string& where, const char* field, bool ours, const json& hf_config) {
    const bool hf = hf_config.contains(field) && hf_config.at(field).get<bool>();
    QVERIFY2(hf == ours, (where + ": field " + field).c_str());
}

// eos_token_id is an int, a list or absent.
std::vector<int64_t> hf_eos_ids(const json& hf) {
    const json eos = hf.contains("eos_token_id") ? hf.at("eos_token_id") : json();
    if (eos.is_number_integer()) return {eos.get<int64_t>()};
    if (eos.is_array()) return eos.get<std::vector<int64_t>>();
    return {};
}

void compare_llama(const std::string& where, const LlamaConfig& c, const json& hf) {
    check_field(where, "hidden_size", c.hidden_size, hf);
    check_field(where, "intermediate_size", c.intermediate_size, hf);
    check_field(where, "num_hidden_layers", c.num_hidden_layers, hf);
    check_field(where, "num_attention_heads", c.num_attention_heads, hf);
    check_field(where, "num_key_value_heads", c.num_key_value_heads, hf);
    // Qwen2Config has no head_dim attribute: its attention derives it.
    if (hf.contains("head_dim")) check_field(where, "head_dim", c.head_dim, hf);
    else QCOMPARE(c.head_dim, c.hidden_size / c.num_attention_heads);
    check_field(where, "hidden_act", c.hidden_act, hf);
    check_field(where, "max_position_embeddings", c.max_position_embeddings, hf);
    check_field(where, "rms_norm_eps", c.rms_norm_eps, hf);
    check_field(where, "tie_word_embeddings", c.tie_word_embeddings, hf);
    check_field(where, "rope_theta", c.rope_theta, hf);
    check_optional(where, "sliding_window", c.sliding_window, hf);
    check_optional(where, "bos_token_id", c.bos_token_id, hf);
    check_optional(where, "pad_token_id", c.pad_token_id, hf);
    QVERIFY2(c.eos_token_ids == hf_eos_ids(hf), (where + ": eos_token_id hf=" + hf.value("eos_token_id", json()).dump()).c_str());
    if (hf.contains("attention_bias")) check_field(where, "attention_bias", c.attention_bias, hf);
    if (hf.contains("mlp_bias")) check_field(where, "mlp_bias", c.mlp_bias, hf);
    if (hf.contains("use_sliding_window")) {
        check_field(where, "use_sliding_window", c.use_sliding_window, hf);
        check_field(where, "max_window_layers", c.max_window_layers, hf);
    }
    const json rs = hf.contains("rope_scaling") ? hf.at("rope_scaling") : json();
    // Mistral keeps a rope_scaling key as a plain attribute that its rotary embedding never reads.
    if (rs.is_null() || hf.at("model_type") == "mistral") {
        QVERIFY2(!c.rope_scaling, (where + ": rope_scaling").c_str());
    } else {
        QVERIFY2(c.rope_scaling, (where + ": rope_scaling").c_str());
        QCOMPARE(c.rope_scaling->rope_type, rs.at("rope_type").get<std::string>());
        if (rs.contains("factor")) QCOMPARE(c.rope_scaling->factor, rs.at("factor").get<double>());
    }
}

void compare_config(const std::string& where, const ModelConfig& m, const json& hf) {
    QCOMPARE(m.model_type, hf.at("model_type").get<std::string>());
    check_optional<std::string>(where, "torch_dtype",
                                m.torch_dtype.empty() ? std::nullopt : std::optional<std::string>(m.torch_dtype), hf);
    if (hf.contains("architectures") && !hf.at("architectures").is_null())
        QCOMPARE(m.architectures, hf.at("architectures").get<std::vector<std::string>>());
    QCOMPARE(m.vocab_size(), hf.at("vocab_size").get<int64_t>());
    switch (m.family) {
        case Family::T5: {
            const T5Config& c = m.t5();
            check_field(where, "d_model", c.d_model, hf);
            check_field(where, "d_kv", c.d_kv, hf);
            check_field(where, "d_ff", c.d_ff, hf);
            check_field(where, "num_layers", c.num_layers, hf);
            check_field(where, "num_decoder_layers", c.num_decoder_layers, hf);
            check_field(where, "num_heads", c.num_heads, hf);
            check_field(where, "relative_attention_num_buckets", c.relative_attention_num_buckets, hf);
            check_field(where, "relative_attention_max_distance", c.relative_attention_max_distance, hf);
            check_field(where, "layer_norm_epsilon", c.layer_norm_epsilon, hf);
            check_field(where, "feed_forward_proj", c.feed_forward_proj, hf);
            check_field(where, "dense_act_fn", c.dense_act_fn, hf);
            check_field(where, "is_gated_act", c.is_gated_act, hf);
            check_field(where, "tie_word_embeddings", c.tie_word_embeddings, hf);
            check_field(where, "pad_token_id", c.pad_token_id, hf);
            check_field(where, "eos_token_id", c.eos_token_id, hf);
            check_optional(where, "scale_decoder_outputs", c.scale_decoder_outputs, hf);
            // HF has no default here (generation refuses); we fall back to pad, T5's convention.
            if (!hf.at("decoder_start_token_id").is_null())
                check_field(where, "decoder_start_token_id", c.decoder_start_token_id, hf);
            else
                QCOMPARE(c.decoder_start_token_id, c.pad_token_id);
            break;
        }
        case Family::Bart: {
            const BartConfig& c = m.bart();
            check_field(where, "max_position_embeddings", c.max_position_embeddings, hf);
            check_field(where, "d_model", c.d_model, hf);
            check_field(where, "encoder_layers", c.encoder_layers, hf);
            check_field(where, "encoder_ffn_dim", c.encoder_ffn_dim, hf);
            check_field(where, "encoder_attention_heads", c.encoder_attention_heads, hf);
            check_field(where, "decoder_layers", c.decoder_layers, hf);
            check_field(where, "decoder_ffn_dim", c.decoder_ffn_dim, hf);
            check_field(where, "decoder_attention_heads", c.decoder_attention_heads, hf);
            check_field(where, "activation_function", c.activation_function, hf);
            check_field(where, "scale_embedding", c.scale_embedding, hf);
            check_field(where, "tie_word_embeddings", c.tie_word_embeddings, hf);
            check_field(where, "pad_token_id", c.pad_token_id, hf);
            check_optional(where, "bos_token_id", c.bos_token_id, hf);
            check_field(where, "eos_token_id", c.eos_token_id, hf);
            check_optional(where, "decoder_start_token_id", c.decoder_start_token_id, hf);
            check_optional(where, "forced_bos_token_id", c.forced_bos_token_id, hf);
            if (hf.contains("decoder_vocab_size")) {  // MarianConfig's: the head's rows when not shared
                check_field(where, "share_encoder_decoder_embeddings", c.share_encoder_decoder_embeddings, hf);
                check_field(where, "decoder_vocab_size", c.decoder_vocab_size, hf);
            }
            check_optional(where, "forced_eos_token_id", c.forced_eos_token_id, hf);
            check_flag_default_false(where, "normalize_before", c.normalize_before, hf);
            check_flag_default_false(where, "add_final_layer_norm", c.add_final_layer_norm, hf);
            break;
        }
        case Family::Bloom: {
            const BloomConfig& c = m.bloom();
            check_field(where, "hidden_size", c.hidden_size, hf);
            check_field(where, "n_layer", c.n_layer, hf);
            check_field(where, "n_head", c.n_head, hf);
            check_field(where, "layer_norm_epsilon", c.layer_norm_epsilon, hf);
            check_field(where, "apply_residual_connection_post_layernorm", c.apply_residual_connection_post_layernorm, hf);
            check_field(where, "tie_word_embeddings", c.tie_word_embeddings, hf);
            check_field(where, "bos_token_id", c.bos_token_id, hf);
            check_field(where, "eos_token_id", c.eos_token_id, hf);
            check_optional(where, "pad_token_id", c.pad_token_id, hf);
            break;
        }
        case Family::Llama: compare_llama(where, m.llama(), hf); break;
    }
}

void compare_generation(const std::string& where, const GenerationConfig& g, const json& hf) {
    check_optional(where, "max_length", g.max_length, hf);
    check_optional(where, "max_new_tokens", g.max_new_tokens, hf);
    check_field(where, "min_length", g.min_length, hf);
    check_optional(where, "min_new_tokens", g.min_new_tokens, hf);
    check_field(where, "do_sample", g.do_sample, hf);
    check_field(where, "num_beams", g.num_beams, hf);
    check_field(where, "temperature", g.temperature, hf);
    check_field(where, "top_k", g.top_k, hf);
    check_field(where, "top_p", g.top_p, hf);
    check_field(where, "typical_p", g.typical_p, hf);
    check_optional(where, "min_p", g.min_p, hf);
    check_field(where, "repetition_penalty", g.repetition_penalty, hf);
    check_field(where, "length_penalty", g.length_penalty, hf);
    check_field(where, "no_repeat_ngram_size", g.no_repeat_ngram_size, hf);
    check_field(where, "early_stopping", g.early_stopping, hf);
    check_optional(where, "bos_token_id", g.bos_token_id, hf);
    check_optional(where, "pad_token_id", g.pad_token_id, hf);
    check_optional(where, "decoder_start_token_id", g.decoder_start_token_id, hf);
    check_optional(where, "forced_bos_token_id", g.forced_bos_token_id, hf);
    check_optional(where, "forced_eos_token_id", g.forced_eos_token_id, hf);
    check_field(where, "renormalize_logits", g.renormalize_logits, hf);
    std::vector<std::vector<int64_t>> hf_bad_words;
    if (hf.contains("bad_words_ids") && !hf.at("bad_words_ids").is_null())
        hf_bad_words = hf.at("bad_words_ids").get<std::vector<std::vector<int64_t>>>();
    QVERIFY2(g.bad_words_ids == hf_bad_words, (where + ": bad_words_ids").c_str());
    QVERIFY2(g.eos_token_ids == hf_eos_ids(hf), (where + ": eos_token_id hf=" + hf.value("eos_token_id", json()).dump()).c_str());
}

}  // namespace

class TestConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matches_hf_on_constructed_cases() {
        const std::string root = test::io_oracle_dir() + "/configs";
        const json index = test::read_json_file(root + "/index.json");
        QVERIFY(index.at("cases").size() >= 10);
        for (const auto& name_json : index.at("cases")) {
            const std::string name = name_json.get<std::string>();
            const json record = test::read_json_file(root + "/" + name + ".json");
            const ModelConfig m = load_model_config(root + "/" + name);
            compare_config(name, m, record.at("config"));
            if (QTest::currentTestFailed()) return;
            compare_generation(name, load_generation_config(root + "/" + name, m), record.at("generation"));
            if (QTest::currentTestFailed()) return;
        }
    }

    void matches_hf_on_saved_models() {
        const std::string root = test::io_oracle_dir() + "/configs";
        const json index = test::read_json_file(root + "/index.json");
        for (const auto& name_json : index.at("saved")) {
            const std::string name = name_json.get<std::string>();
            const json record = test::read_json_file(root + "/saved_" + name + ".json");
            const std::string dir = record.at("directory").get<std::string>();
            const ModelConfig m = load_model_config(dir);
            compare_config(name, m, record.at("config"));
            if (QTest::currentTestFailed()) return;
            compare_generation(name, load_generation_config(dir, m), record.at("generation"));
            if (QTest::currentTestFailed()) return;
        }
    }

    void derived_t5_feed_forward() {
        const auto relu = parse_model_config(R"({"model_type":"t5"})", "x/config.json");
        QCOMPARE(relu.t5().dense_act_fn, std::string("relu"));
        QVERIFY(!relu.t5().is_gated_act);
        const auto gated = parse_model_config(R"({"model_type":"t5","feed_forward_proj":"gated-gelu"})", "x/config.json");
        QCOMPARE(gated.t5().dense_act_fn, std::string("gelu_new"));
        QVERIFY(gated.t5().is_gated_act);
    }

    void errors_name_the_file_and_field() {
        using test::expect_error;
        expect_error([] { parse_model_config(R"({"model_type":"gpt2"})", "/m/config.json"); },
                     ErrorKind::Unsupported, {"/m/config.json", "gpt2"}, "unknown model_type");
        expect_error([] { parse_model_config(R"({"vocab_size": 3})", "/m/config.json"); }, ErrorKind::Format,
                     {"/m/config.json", "model_type"}, "missing model_type");
        expect_error([] { parse_model_config(R"({"model_type":"t5",)", "/m/config.json"); }, ErrorKind::Format,
                     {"/m/config.json", "malformed JSON"}, "malformed JSON");
        expect_error([] { parse_model_config(R"([1,2])", "/m/config.json"); }, ErrorKind::Format,
                     {"/m/config.json"}, "array at top level");
        expect_error([] { parse_model_config(R"({"model_type":"t5","d_model":"big"})", "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "d_model"}, "wrong field type");
        expect_error([] { parse_model_config(R"({"model_type":"t5","num_heads":0})", "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "num_heads"}, "zero heads");
        expect_error([] { parse_model_config(R"({"model_type":"t5","feed_forward_proj":"gelu-relu"})", "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "feed_forward_proj"}, "bad feed_forward_proj");
        expect_error([] { parse_model_config(R"({"model_type":"bloom","hidden_size":10,"n_head":3})", "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "hidden_size"}, "indivisible heads");
        expect_error([] { parse_model_config(R"({"model_type":"llama","num_attention_heads":6,"num_key_value_heads":4})",
                                             "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "num_key_value_heads"}, "kv heads not dividing heads");
        expect_error([] { parse_model_config(R"({"model_type":"llama","rope_scaling":{"rope_type":"llama3","factor":8.0}})",
                                             "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "low_freq_factor"}, "llama3 without its keys");
        expect_error([] { parse_model_config(R"({"model_type":"qwen2","rope_scaling":{"type":"ntk-by-parts","factor":2}})",
                                             "/m/config.json"); },
                     ErrorKind::Unsupported, {"/m/config.json", "ntk-by-parts"}, "unknown rope type");
        expect_error([] { parse_model_config(R"({"model_type":"qwen2","hidden_size":64,"num_attention_heads":4,"head_dim":32})",
                                             "/m/config.json"); },
                     ErrorKind::Format, {"/m/config.json", "head_dim"}, "qwen2 head_dim disagreeing");
        expect_error([] { load_model_config("/nonexistent/lorascope/dir"); }, ErrorKind::NotFound,
                     {"/nonexistent/lorascope/dir"}, "missing directory");
        QTemporaryDir empty;
        expect_error([&] { load_model_config(empty.path().toStdString()); }, ErrorKind::NotFound,
                     {empty.path().toStdString() + "/config.json"}, "missing config.json");
    }
};

QTEST_APPLESS_MAIN(TestConfig)
#include "test_config.moc"
