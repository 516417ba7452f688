// lorascope-cli info: a JSON summary of a model directory (architecture, weights on disk,
// tokenizer, generation defaults) and of PEFT adapters; --load loads every tensor as the model
// would so that load time and peak memory can be measured.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "lorascope/adapter.h"
#include "lorascope/config.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "lorascope/inspect.h"
#include "lorascope/model_check.h"
#include "lorascope/tokenizer.h"

namespace lorascope::cli {
namespace {

using nlohmann::ordered_json;

const char* const kUsage =
    "usage: lorascope-cli info --model DIR [--adapter NAME=DIR]... [--load]\n"
    "  --model DIR           Hugging Face checkpoint directory (config.json + safetensors)\n"
    "  --adapter NAME=DIR    a PEFT LoRA adapter directory to summarise and validate against the\n"
    "                        model (repeatable); a failed validation is an error naming the problem\n"
    "  --load                load every tensor as float32 and report time and a checksum\n";

template <typename T>
ordered_json optional_json(const std::optional<T>& value) {
    return value ? ordered_json(*value) : ordered_json();
}

void llama_architecture_json(const LlamaConfig& c, ordered_json& a) {
    a["layers"] = c.num_hidden_layers;
    a["hidden_size"] = c.hidden_size;
    a["intermediate_size"] = c.intermediate_size;
    a["heads"] = c.num_attention_heads;
    a["kv_heads"] = c.num_key_value_heads;
    a["head_dim"] = c.head_dim;
    a["hidden_act"] = c.hidden_act;
    a["max_position_embeddings"] = c.max_position_embeddings;
    a["rope_theta"] = c.rope_theta;
    a["rope_scaling"] = c.rope_scaling ? ordered_json(c.rope_scaling->rope_type) : ordered_json();
    if (c.rope_scaling && c.rope_scaling->rope_type != "default") a["rope_factor"] = c.rope_scaling->factor;
    a["sliding_window"] = optional_json(c.sliding_window);
    a["attention_bias"] = c.attention_bias;
    a["qkv_bias"] = c.qkv_bias || c.attention_bias;
    a["mlp_bias"] = c.mlp_bias;
    a["rms_norm_eps"] = c.rms_norm_eps;
    a["tie_word_embeddings"] = c.tie_word_embeddings;
    a["vocab_size"] = c.vocab_size;
}

ordered_json architecture_json(const ModelConfig& m) {
    ordered_json a;
    switch (m.family) {
        case Family::T5: {
            const auto& c = m.t5();
            a["encoder_layers"] = c.num_layers;
            a["decoder_layers"] = c.num_decoder_layers;
            a["d_model"] = c.d_model;
            a["d_ff"] = c.d_ff;
            a["heads"] = c.num_heads;
            a["head_dim"] = c.d_kv;
            a["feed_forward_proj"] = c.feed_forward_proj;
            a["dense_act_fn"] = c.dense_act_fn;
            a["is_gated_act"] = c.is_gated_act;
            a["relative_attention_num_buckets"] = c.relative_attention_num_buckets;
            a["relative_attention_max_distance"] = c.relative_attention_max_distance;
            a["layer_norm_epsilon"] = c.layer_norm_epsilon;
            a["tie_word_embeddings"] = c.tie_word_embeddings;
            a["vocab_size"] = c.vocab_size;
            break;
        }
        case Family::Bart: {
            const auto& c = m.bart();
            a["encoder_layers"] = c.encoder_layers;
            a["decoder_layers"] = c.decoder_layers;
            a["d_model"] = c.d_model;
            a["encoder_ffn_dim"] = c.encoder_ffn_dim;
            a["decoder_ffn_dim"] = c.decoder_ffn_dim;
            a["encoder_heads"] = c.encoder_attention_heads;
            a["decoder_heads"] = c.decoder_attention_heads;
            a["activation_function"] = c.activation_function;
            a["max_position_embeddings"] = c.max_position_embeddings;
            a["scale_embedding"] = c.scale_embedding;
            a["normalize_before"] = c.normalize_before;
            a["add_final_layer_norm"] = c.add_final_layer_norm;
            a["tie_word_embeddings"] = c.tie_word_embeddings;
            a["vocab_size"] = c.vocab_size;
            // What the model type fixes (config.json's normalize_before and friends do not).
            a["position_embedding"] = to_string(c.position_embedding);
            a["pre_layer_norm"] = c.pre_layer_norm;
            a["final_layer_norms"] = c.final_layer_norms;
            a["layernorm_embedding"] = c.layernorm_embedding;
            a["final_logits_bias"] = c.final_logits_bias;
            if (!c.share_encoder_decoder_embeddings) a["decoder_vocab_size"] = c.decoder_vocab_size;
            break;
        }
        case Family::Bloom: {
            const auto& c = m.bloom();
            a["layers"] = c.n_layer;
            a["hidden_size"] = c.hidden_size;
            a["heads"] = c.n_head;
            a["head_dim"] = c.hidden_size / c.n_head;
            a["ffn_dim"] = 4 * c.hidden_size;
            a["layer_norm_epsilon"] = c.layer_norm_epsilon;
            a["apply_residual_connection_post_layernorm"] = c.apply_residual_connection_post_layernorm;
            a["tie_word_embeddings"] = c.tie_word_embeddings;
            a["vocab_size"] = c.vocab_size;
            break;
        }
        case Family::Llama: llama_architecture_json(m.llama(), a); break;
    }
    return a;
}

ordered_json weights_json(const WeightsFacts& facts) {
    ordered_json w;
    w["format"] = facts.format;
    w["sharded"] = facts.sharded;
    ordered_json files = ordered_json::array();
    for (const auto& file : facts.files) files.push_back({{"path", file.path}, {"bytes", file.bytes}});
    w["files"] = files;
    w["file_bytes"] = facts.file_bytes;
    w["tensors"] = facts.tensors;
    w["parameters"] = facts.parameters;
    w["dtypes"] = facts.parameters_per_dtype;  // parameters per stored dtype
    return w;
}

// The model's language codes: a request's src_lang / tgt_lang (mBART-50, NLLB) or, for Marian's
// multi-target models, a >>code<< written at the start of the source text. Null without codes.
ordered_json languages_json(const Tokenizer& tok) {
    const auto& codes = tok.language_codes();
    if (codes.empty()) return nullptr;
    return ordered_json{{"count", codes.size()},
                        {"use", tok.takes_language_options() ? "src_lang / tgt_lang request parameters"
                                                             : "written at the start of the source text"},
                        {"codes", codes}};
}

ordered_json tokenizer_json(const std::string& dir) {
    try {
        auto tok = load_tokenizer(dir);
        const SpecialIds& s = tok->special_ids();
        return ordered_json{{"kind", to_string(tok->kind())},
                            {"description", tok->describe()},
                            {"vocab_size", tok->vocab_size()},
                            {"special_ids",
                             {{"bos", optional_json(s.bos)}, {"eos", optional_json(s.eos)}, {"pad", optional_json(s.pad)},
                              {"unk", optional_json(s.unk)}, {"decoder_start", optional_json(s.decoder_start)}}},
                            {"languages", languages_json(*tok)}};
    } catch (const Error& e) {
        // A checkpoint without tokenizer files is still worth describing.
        return ordered_json{{"error", e.what()}};
    }
}

ordered_json generation_json(const GenerationConfig& g) {
    return ordered_json{{"max_length", optional_json(g.max_length)},
                        {"max_new_tokens", optional_json(g.max_new_tokens)},
                        {"min_length", g.min_length},
                        {"do_sample", g.do_sample},
                        {"num_beams", g.num_beams},
                        {"temperature", g.temperature},
                        {"top_k", g.top_k},
                        {"top_p", g.top_p},
                        {"repetition_penalty", g.repetition_penalty},
                        {"no_repeat_ngram_size", g.no_repeat_ngram_size},
                        {"bos_token_id", optional_json(g.bos_token_id)},
                        {"eos_token_id", g.eos_token_ids},
                        {"pad_token_id", optional_json(g.pad_token_id)},
                        {"decoder_start_token_id", optional_json(g.decoder_start_token_id)},
                        {"forced_bos_token_id", optional_json(g.forced_bos_token_id)},
                        {"forced_eos_token_id", optional_json(g.forced_eos_token_id)}};
}

ordered_json adapter_json(const std::string& name, const AdapterFacts& facts) {
    const AdapterConfig& c = facts.config;
    ordered_json targets = c.target_modules_regex ? ordered_json(*c.target_modules_regex) : ordered_json(c.target_modules);
    return ordered_json{{"name", name},
                        {"directory", facts.directory},
                        {"r", c.r},
                        {"lora_alpha", c.lora_alpha},
                        {"use_rslora", c.use_rslora},
                        {"target_modules", targets},
                        {"adapted_module_names", facts.adapted_module_names},
                        {"modules", facts.modules},
                        {"ranks", facts.ranks},
                        {"parameters", facts.parameters},
                        {"file_bytes", facts.file_bytes},
                        {"base_model_name_or_path", c.base_model_name_or_path},
                        {"task_type", c.task_type}};
}

ordered_json load_json(const WeightLoadFacts& facts) {
    return ordered_json{{"dtype", facts.dtype},
                        {"tensors", facts.tensors},
                        {"bytes", facts.bytes},
                        {"seconds", facts.seconds},
                        {"checksum", facts.checksum}};
}

}  // namespace

int cmd_info(int argc, char** argv) {
    const Args args(argc, argv, 2, {"load", "help"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    args.allow_only({"model", "adapter", "load", "help"});
    if (!args.positional().empty())
        throw Error(ErrorKind::InvalidArgument, "unexpected argument '" + args.positional().front() + "'");
    const std::string dir = args.require("model");

    const ModelConfig config = load_model_config(dir);
    ordered_json out;
    out["directory"] = dir;
    out["family"] = to_string(config.family);
    out["model_type"] = config.model_type;
    out["name_or_path"] = config.name_or_path;
    out["architectures"] = config.architectures;
    out["torch_dtype"] = config.torch_dtype.empty() ? ordered_json() : ordered_json(config.torch_dtype);
    out["encoder_decoder"] = config.is_encoder_decoder();
    out["vocab_size"] = config.vocab_size();
    out["architecture"] = architecture_json(config);
    out["weights"] = weights_json(describe_weights(dir));
    out["tokenizer"] = tokenizer_json(dir);
    out["generation"] = generation_json(load_generation_config(dir, config));
    // What --dtype can mean on this machine's CPU (the model's stored dtype is torch_dtype above).
    ordered_json compute = ordered_json::array();
    for (const ComputeType& t : cpu_compute_types())
        compute.push_back(ordered_json{
            {"dtype", t.name}, {"available", t.available}, {"computes", t.detail}, {"kv_cache", t.kv_cache}});
    out["cpu_compute"] = ordered_json{{"default", "float32"},
                                      {"instruction_sets", runtime_info().cpu_isa},
                                      {"dtypes", compute},
                                      {"int8_accuracy", int8_accuracy_note()}};

    ordered_json adapter_list = ordered_json::array();
    AdapterValidator validator(dir);   // loads the model only when an adapter is to be validated
    for (const auto& spec : args.all("adapter")) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw Error(ErrorKind::InvalidArgument, "--adapter expects NAME=DIR, got '" + spec + "'");
        const std::string name = spec.substr(0, eq), adapter_dir = spec.substr(eq + 1);
        ordered_json a = adapter_json(name, describe_adapter(adapter_dir));
        // Validated as the engine would before accepting it: modules exist in this architecture,
        // A/B shapes fit, patterns resolve; a failure throws and the command reports it.
        const AdapterInfo info = validator.validate(name, adapter_dir);
        a["validation"] = info.warnings.empty() ? "ok" : "ok with warnings";
        a["applied"] = ordered_json{{"rank", info.rank},
                                    {"lora_alpha", info.alpha},
                                    {"targets", info.targets},
                                    {"parameters", info.parameters},
                                    {"bytes", info.bytes}};
        a["warnings"] = info.warnings;
        adapter_list.push_back(std::move(a));
    }
    out["adapters"] = adapter_list;
    if (args.has("load")) out["load"] = load_json(load_all_weights(dir, config));

    std::cout << out.dump(2) << std::endl;
    return 0;
}

}  // namespace lorascope::cli
