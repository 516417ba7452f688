// The likelihood of given targets, as Hugging Face computes the loss when `labels` are passed, plus
// each target token's log-probability (lorascope_engine). Loads a model once, then scores on the
// calling thread; not thread-safe (one Scorer per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/config.h"
#include "lorascope/engine.h"

namespace lorascope {

// A label left out of the loss (Hugging Face's ignore_index).
inline constexpr int64_t kIgnoreLabel = -100;

struct ScoreResult {
    double loss = 0.0;                                  // mean cross-entropy over scored tokens
    std::vector<std::optional<double>> token_logprobs;  // one per label; empty where not scored
    int64_t scored_tokens = 0;
};

class Scorer {
public:
    // Loads config.json, generation_config.json and the weights (CPU) on the calling thread, with
    // the products in `dtype` as EngineOptions::dtype means it ("float32", "bfloat16", "int8"), and
    // the K/V cache in `kv_cache_dtype` as EngineOptions::kv_cache_dtype means it.
    // Throws lorascope::Error naming the directory or file, or the dtype this CPU cannot run.
    static std::unique_ptr<Scorer> open(const std::string& model_dir, const std::string& dtype = "float32",
                                        const std::string& kv_cache_dtype = "auto");
    virtual ~Scorer() = default;

    virtual const ModelConfig& model_config() const = 0;
    virtual bool is_encoder_decoder() const = 0;
    virtual int64_t vocab_size() const = 0;  // the logits' width: ids at or above it cannot be scored

    // Validates and attaches an adapter as an Engine would; score() may then name it.
    virtual AdapterInfo load_adapter(const std::string& name, const std::string& adapter_dir) = 0;

    // Seq2seq: `source` is the encoder input, `labels` the target; the decoder reads the labels
    // shifted right behind the decoder start token (kIgnoreLabel read as pad) and every label except
    // kIgnoreLabel is scored. Decoder-only: `source` is the prompt and `labels` the continuation
    // scored given it. `adapter`: a name given to load_adapter, empty for the base model.
    // Throws lorascope::Error (InvalidArgument) when nothing can be scored or a label is outside
    // the vocabulary, (NotFound) for an unknown adapter.
    virtual ScoreResult score(const std::vector<int64_t>& source, const std::vector<int64_t>& labels,
                              const std::string& adapter = {}) = 0;
};

}  // namespace lorascope
