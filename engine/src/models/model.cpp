#include "models/model.h"

#include <algorithm>

#include "lorascope/error.h"
#include "models/causal_lm.h"
#include "models/seq2seq_lm.h"

namespace lorascope::models {

TokenBatch TokenBatch::from_rows(const std::vector<std::vector<int64_t>>& rows, int64_t pad_id, const at::Device& device) {
    TokenBatch batch;
    size_t width = 0;
    for (const auto& r : rows) width = std::max(width, r.size());
    std::vector<int64_t> flat(rows.size() * width, pad_id);
    for (size_t i = 0; i < rows.size(); ++i) {
        std::copy(rows[i].begin(), rows[i].end(), flat.begin() + static_cast<std::ptrdiff_t>(i * width));
        batch.lengths.push_back(static_cast<int64_t>(rows[i].size()));
    }
    batch.ids = at::tensor(flat, at::TensorOptions().dtype(at::kLong))
                    .view({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)})
                    .to(device);
    return batch;
}

TokenBatch TokenBatch::single_tokens(const at::Tensor& tokens) {
    TokenBatch batch;
    batch.ids = tokens.to(at::kLong).view({-1, 1});
    batch.lengths.assign(static_cast<size_t>(batch.ids.size(0)), 1);
    return batch;
}

at::Tensor gather_positions(const at::Tensor& h, const std::vector<int64_t>& index) {
    at::Tensor idx = at::tensor(index, at::TensorOptions().dtype(at::kLong)).to(h.device());
    return h.gather(1, idx.view({-1, 1, 1}).expand({h.size(0), 1, h.size(2)})).squeeze(1);
}

int64_t Model::decoder_start_token_id() const {
    if (auto start = lorascope::decoder_start_token_id(config_, generation_)) return *start;
    throw Error(ErrorKind::Unsupported, std::string(to_string(config_.family)) + " models have no decoder start token");
}

int64_t Model::pad_token_id() const {
    if (generation_.pad_token_id) return *generation_.pad_token_id;
    switch (config_.family) {
        case Family::T5: return config_.t5().pad_token_id;
        case Family::Bart: return config_.bart().pad_token_id;
        case Family::Bloom: break;
        case Family::Llama: {
            // generate() pads with the first eos when no pad is set (Llama and Mistral set none).
            const LlamaConfig& c = config_.llama();
            if (c.pad_token_id) return *c.pad_token_id;
            const auto eos = eos_token_ids();
            return eos.empty() ? 0 : eos.front();
        }
    }
    return config_.bloom().pad_token_id.value_or(config_.bloom().eos_token_id);
}

std::vector<int64_t> Model::eos_token_ids() const {
    if (!generation_.eos_token_ids.empty()) return generation_.eos_token_ids;
    switch (config_.family) {
        case Family::T5: return {config_.t5().eos_token_id};
        case Family::Bart: return {config_.bart().eos_token_id};
        case Family::Bloom: break;
        case Family::Llama: return config_.llama().eos_token_ids;
    }
    return {config_.bloom().eos_token_id};
}

Model::EncoderWork Model::begin_encoder(const TokenBatch&) const {
    throw Error(ErrorKind::Internal, directory_, "a decoder-only model has no encoder");
}

void Model::run_encoder(EncoderWork&, int64_t, const LoraHook*) const {
    throw Error(ErrorKind::Internal, directory_, "a decoder-only model has no encoder");
}

DecodeState Model::finish_encoder(EncoderWork&, const LoraHook*, std::shared_ptr<KvPool>) const {
    throw Error(ErrorKind::Internal, directory_, "a decoder-only model has no encoder");
}

std::shared_ptr<KvPool> Model::make_pool(int64_t blocks, bool growable) const {
    return std::make_shared<KvPool>(cache_shape_, blocks, options_.dtype(cache_dtype()), growable,
                                    options_.dtype().toScalarType());
}

std::pair<DecodeState, at::Tensor> Model::prefill(const TokenBatch& prompts, const LoraHook* lora,
                                                  std::shared_ptr<KvPool> pool) const {
    DecodeState state = start(prompts, lora, std::move(pool));
    if (is_encoder_decoder()) {
        at::Tensor logits = first_decoder_step(state, lora);
        return {std::move(state), logits};
    }
    at::Tensor logits = forward(state, prompts, LogitsAt::LastValid, lora);
    return {std::move(state), logits};
}

void Model::init_common(const ModelConfig& config, const GenerationConfig& generation, at::TensorOptions options,
                        std::string directory, int64_t vocab_size) {
    config_ = config;
    generation_ = generation;
    options_ = options;
    directory_ = std::move(directory);
    vocab_size_ = vocab_size;
}

at::Tensor Model::first_decoder_step(DecodeState& state, const LoraHook* lora) const {
    at::Tensor starts = at::full({state.rows()}, decoder_start_token_id(), at::TensorOptions().dtype(at::kLong));
    return forward(state, TokenBatch::single_tokens(starts), LogitsAt::LastValid, lora);
}

at::Tensor Model::decode_step(DecodeState& state, const at::Tensor& tokens, const LoraHook* lora) const {
    return forward(state, TokenBatch::single_tokens(tokens), LogitsAt::LastValid, lora);
}

namespace {

// Every generation starts from this token: a model whose config names none, or one outside the
// decoder's vocabulary (Marian's class default 58100 in a smaller model), is refused at load.
void check_decoder_start(const Model& model, const std::string& dir) {
    const auto start = lorascope::decoder_start_token_id(model.config(), model.generation_config());
    if (!start)
        throw Error(ErrorKind::Format, dir + "/config.json",
                    "no decoder_start_token_id (nor bos_token_id) says where the decoder starts");
    if (*start < 0 || *start >= model.vocab_size())
        throw Error(ErrorKind::Format, dir + "/config.json",
                    "decoder_start_token_id " + std::to_string(*start) + " is outside the decoder's vocabulary [0, " +
                        std::to_string(model.vocab_size()) + ")");
}

}  // namespace

std::unique_ptr<Model> load_model(const std::string& dir, const LoadOptions& options) {
    ModelConfig config = load_model_config(dir);
    GenerationConfig generation = load_generation_config(dir, config);
    weights::WeightLoadOptions weight_options;
    weight_options.dtype = options.dtype;
    weight_options.device = options.device;
    weight_options.allow_pickle = options.allow_pickle;
    weight_options.progress = options.progress;
    auto store = weights::WeightStore::open(dir, config, weight_options);
    const auto tensor_options = at::TensorOptions().dtype(options.dtype).device(options.device);
    std::optional<ops::MatmulKind> packing;
    if (options.device.is_cpu()) packing = options.cpu_matmul;
    std::unique_ptr<Model> model;
    switch (config.family) {
        case Family::T5: model = Seq2SeqLM::load_t5(config, generation, store, tensor_options, packing); break;
        case Family::Bart: model = Seq2SeqLM::load_bart(config, generation, store, tensor_options, packing); break;
        case Family::Bloom: model = CausalLM::load_bloom(config, generation, store, tensor_options, packing); break;
        case Family::Llama: model = CausalLM::load_llama(config, generation, store, tensor_options, packing); break;
    }
    if (!model) throw Error(ErrorKind::Unsupported, dir + "/config.json", "unknown model family");
    if (model->is_encoder_decoder()) check_decoder_start(*model, dir);
    if (options.kv_cache_dtype) model->set_cache_dtype(*options.kv_cache_dtype);
    return model;
}

}  // namespace lorascope::models
