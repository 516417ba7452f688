// The model interface every family implements, and the per-batch state it reads and grows.
// Models are immutable after loading: all per-request data lives in DecodeState (models/kv_pool.h),
// so one model can serve many batches, and the batch layer can filter/concatenate/reorder states.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lorascope/config.h"
#include "models/kv_pool.h"
#include "models/linear.h"
#include "runtime/compute_choice.h"

namespace lorascope::models {

struct LoadOptions {
    at::ScalarType dtype = at::kFloat;  // of the tensors, the activations and the KV cache
    at::Device device = at::kCPU;
    bool allow_pickle = false;
    // CPU only: pack every linear (and the embeddings, where tied to the head or not float32) at
    // load for oneDNN's matmul in this type (ops/cpu_matmul.h); none keeps ATen's path. dtype
    // stays float32 with it: norms, softmax, attention and the residual stream run in float32.
    std::optional<ops::MatmulKind> cpu_matmul;
    // The K/V cache's type when it differs from dtype (a bfloat16 cache under float32 attention).
    std::optional<at::ScalarType> kv_cache_dtype;
    std::function<bool(int64_t read, int64_t total)> progress;   // EngineOptions::load_progress

    // What --dtype, --device and --kv-cache-dtype chose (runtime::choose_compute).
    static LoadOptions from(const runtime::ComputeChoice& choice) {
        LoadOptions o;
        o.dtype = choice.dtype;
        o.device = choice.device;
        o.cpu_matmul = choice.cpu_matmul;
        o.kv_cache_dtype = choice.kv_cache_dtype;
        return o;
    }
};

// Token ids of several rows, right-padded: row b is valid in [0, lengths[b]).
struct TokenBatch {
    at::Tensor ids;                 // [B, T] int64
    std::vector<int64_t> lengths;
    // Decoder-only, optional (empty: cached + these tokens): each row's length once the prompt this
    // pass is a chunk of is all in. Dynamic NTK rotary scaling depends on the length of the pass, and
    // Hugging Face runs a prompt as one pass; a chunked prompt gives its whole length here.
    std::vector<int64_t> pass_lengths;

    int64_t rows() const { return static_cast<int64_t>(lengths.size()); }
    static TokenBatch from_rows(const std::vector<std::vector<int64_t>>& rows, int64_t pad_id,
                                const at::Device& device = at::kCPU);
    // One token per row (a decoding step).
    static TokenBatch single_tokens(const at::Tensor& tokens);
};

// Which positions' logits forward() computes: each row's last valid one, all, or none (a prompt
// chunk whose last token is fed later: no final norm, no LM head).
enum class LogitsAt { LastValid, All, None };

class Model {
public:
    virtual ~Model() = default;

    const ModelConfig& config() const { return config_; }
    const GenerationConfig& generation_config() const { return generation_; }
    Family family() const { return config_.family; }
    bool is_encoder_decoder() const { return config_.is_encoder_decoder(); }
    int64_t vocab_size() const { return vocab_size_; }  // the logits' width
    // Ids a prompt may hold: the encoder's vocabulary (Marian's may differ from the decoder's).
    virtual int64_t source_vocab_size() const { return vocab_size_; }
    at::TensorOptions options() const { return options_; }
    const std::string& directory() const { return directory_; }
    // Every adapter-targetable linear, with HF module names (what PEFT's target_modules match).
    const std::vector<LinearSite>& linear_sites() const { return sites_; }

    int64_t decoder_start_token_id() const;
    int64_t pad_token_id() const;
    std::vector<int64_t> eos_token_ids() const;

    // The shape of this model's decoder K/V per position, and a pool for it: `blocks` of
    // KvPool::kBlockSize positions (growable: doubles when full, for standalone use).
    CacheShape cache_shape() const { return cache_shape_; }
    std::shared_ptr<KvPool> make_pool(int64_t blocks, bool growable) const;
    // The type the K/V cache stores (default: the model's). Layers attend in the model's type;
    // a narrower cache rounds K/V when they are written (LoadOptions::kv_cache_dtype).
    at::ScalarType cache_dtype() const { return cache_dtype_.value_or(options_.dtype().toScalarType()); }
    void set_cache_dtype(at::ScalarType dtype) { cache_dtype_ = dtype; }

    // Seq2seq: runs the encoder over the prompts once and writes each decoder layer's cross K/V
    // into the rows' blocks. Decoder-only: empty rows for the prompts (they go through forward()).
    // `pool`: where the state's blocks come from; null gives a small growable pool of its own.
    virtual DecodeState start(const TokenBatch& prompts, const LoraHook* lora = nullptr,
                              std::shared_ptr<KvPool> pool = nullptr) const = 0;

    // Seq2seq: the encoder as resumable work, so that an engine step can run part of it (a few of
    // its layers) and decoding rows never wait for a whole encoder pass. start() is begin_encoder,
    // every unit of run_encoder and finish_encoder. Units: one per encoder layer, and one for the
    // final norm and the decoder layers' cross K/V projections. Decoder-only models have no units.
    struct EncoderWork {
        TokenBatch prompts;
        at::Tensor hidden;        // [B, S, d] after `done` layers
        at::Tensor bias;          // padding (+ T5 position) bias of the encoder's self-attention
        int64_t done = 0;
    };
    virtual int64_t encoder_units() const { return 0; }
    virtual EncoderWork begin_encoder(const TokenBatch& prompts) const;
    // Runs up to `units` more units (not the last one, which finish_encoder runs).
    virtual void run_encoder(EncoderWork& work, int64_t units, const LoraHook* lora = nullptr) const;
    virtual DecodeState finish_encoder(EncoderWork& work, const LoraHook* lora = nullptr,
                                       std::shared_ptr<KvPool> pool = nullptr) const;

    // Feeds decoder tokens [B, T] (row b valid in [0, lengths[b]), appended after its cached tokens),
    // grows the cache and returns fp32 logits: [B, V] at each row's last valid token, or [B, T, V].
    virtual at::Tensor forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which,
                               const LoraHook* lora = nullptr) const = 0;

    // start() and the first forward(): decoder start tokens for seq2seq, the prompts for causal.
    // Returns the state and the [B, V] logits of the first generated token.
    std::pair<DecodeState, at::Tensor> prefill(const TokenBatch& prompts, const LoraHook* lora = nullptr,
                                               std::shared_ptr<KvPool> pool = nullptr) const;
    // Seq2seq: the decoder's first step for every row of a state fresh from start() (the decoder
    // start token) -> [B, V] logits. prefill() is start() and this; the engine calls it once for
    // the states of several start() calls concatenated.
    at::Tensor first_decoder_step(DecodeState& state, const LoraHook* lora = nullptr) const;
    // One step: tokens [B] (the last chosen token of each row) -> [B, V] logits.
    at::Tensor decode_step(DecodeState& state, const at::Tensor& tokens, const LoraHook* lora = nullptr) const;

protected:
    // What every family records at load time.
    void init_common(const ModelConfig& config, const GenerationConfig& generation, at::TensorOptions options,
                     std::string directory, int64_t vocab_size);

    ModelConfig config_;
    GenerationConfig generation_;
    at::TensorOptions options_;
    std::string directory_;
    int64_t vocab_size_ = 0;
    CacheShape cache_shape_;
    std::optional<at::ScalarType> cache_dtype_;
    std::vector<LinearSite> sites_;
};

// h[b, index[b]] for h [B, T, d] -> [B, d].
at::Tensor gather_positions(const at::Tensor& h, const std::vector<int64_t>& index);

// Reads config.json, generation_config.json and the safetensors weights of a Hugging Face
// directory. Throws lorascope::Error naming the file (and tensor) on any problem.
std::unique_ptr<Model> load_model(const std::string& dir, const LoadOptions& options = {});

}  // namespace lorascope::models
