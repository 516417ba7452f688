// WeightStore over memory-mapped safetensors: zero-copy tensors when the stored dtype and
// device already match, one conversion otherwise.
#include "weights/weight_store.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "io/safetensors.h"
#include "weights/safetensors_tensor.h"
#include "lorascope/error.h"

namespace lorascope::weights {

using io::SafetensorsCheckpoint;
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Names a checkpoint saved from the bare base model (BartModel, BloomModel) uses without the
// task head's prefix, and the canonical (ForConditionalGeneration / ForCausalLM) names.
std::string canonical_name(Family family, const std::string& name) {
    if (family == Family::Bart && !starts_with(name, "model.") && !starts_with(name, "lm_head.") &&
        name != "final_logits_bias")
        return "model." + name;
    if (family == Family::Bloom && !starts_with(name, "transformer.") && !starts_with(name, "lm_head."))
        return "transformer." + name;
    if (family == Family::Llama && !starts_with(name, "model.") && !starts_with(name, "lm_head."))
        return "model." + name;
    return name;
}

std::vector<std::string> spellings(const std::string& canonical) {
    std::vector<std::string> out{canonical};
    for (const char* prefix : {"model.", "transformer."}) {
        if (starts_with(canonical, prefix)) out.push_back(canonical.substr(std::strlen(prefix)));
    }
    return out;
}

// Weights that Hugging Face ties to one parameter (and writes to the file once).
std::vector<std::string> tied_group(const ModelConfig& config) {
    switch (config.family) {
        case Family::T5: {
            std::vector<std::string> g{"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
            if (config.t5().tie_word_embeddings) g.push_back("lm_head.weight");
            return g;
        }
        case Family::Bart: {
            // Marian with separate vocabularies: the encoder's table stands alone, the head is the decoder's.
            std::vector<std::string> g{"model.decoder.embed_tokens.weight"};
            if (config.bart().share_encoder_decoder_embeddings)
                g = {"model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"};
            if (config.bart().tie_word_embeddings) g.push_back("lm_head.weight");
            return g;
        }
        case Family::Bloom: {
            std::vector<std::string> g{"transformer.word_embeddings.weight"};
            if (config.bloom().tie_word_embeddings) g.push_back("lm_head.weight");
            return g;
        }
        case Family::Llama: {
            std::vector<std::string> g{"model.embed_tokens.weight"};
            if (config.llama().tie_word_embeddings) g.push_back("lm_head.weight");
            return g;
        }
    }
    return {};
}

// HF's `_keep_in_fp32_modules`: T5 loaded in float16 keeps every parameter of a module named "wo"
// (the feed-forward output) in float32, because its activations overflow float16 in real
// checkpoints. Only float16: from_pretrained applies the list for torch_dtype=float16 alone.
bool keep_in_float32(const ModelConfig& config, at::ScalarType dtype, const std::string& name) {
    if (config.family != Family::T5 || dtype != at::kHalf) return false;
    size_t start = 0;
    while (start <= name.size()) {
        const size_t dot = name.find('.', start);
        const size_t end = dot == std::string::npos ? name.size() : dot;
        if (name.compare(start, end - start, "wo") == 0) return true;
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return false;
}

class SafetensorsWeightStore final : public WeightStore {
public:
    SafetensorsWeightStore(std::string dir, std::shared_ptr<SafetensorsCheckpoint> ckpt, const ModelConfig& config,
                           const WeightLoadOptions& options)
        : dir_(std::move(dir)), ckpt_(std::move(ckpt)), config_(config), options_(options),
          tied_(tied_group(config)) {}

    bool contains(const std::string& name) const override { return resolve(name) != nullptr; }

    at::Tensor get(const std::string& name) const override {
        if (auto t = get_optional(name)) return *t;
        throw Error(ErrorKind::NotFound, ckpt_->source_path(), "no tensor '" + name + "' in the checkpoint");
    }

    std::optional<at::Tensor> get_optional(const std::string& name) const override {
        const SafetensorsCheckpoint::Entry* entry = resolve(name);
        if (!entry) return std::nullopt;
        at::Tensor t = read(name, *entry);
        report_progress(*entry);
        return t;
    }

    const void* source_id(const std::string& name) const override { return resolve(name); }

    void release(const std::string& name) override {
        const SafetensorsCheckpoint::Entry* entry = resolve(name);
        if (!entry) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (converted_.erase(entry->info)) return;  // the converted copy's source was released already
        uint8_t* bytes = entry->file->data(*entry->info);
        release_source_pages(bytes, entry->info->nbytes());
    }

    void release_rows(const std::string& name, int64_t begin, int64_t end) override {
        const SafetensorsCheckpoint::Entry* entry = resolve(name);
        if (!entry || entry->info->shape.empty() || entry->info->shape[0] == 0) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (converted_.count(entry->info)) return;
        const size_t row_bytes = entry->info->nbytes() / static_cast<size_t>(entry->info->shape[0]);
        uint8_t* bytes = entry->file->data(*entry->info);
        release_source_pages(bytes + static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(end - begin) * row_bytes);
    }

    std::vector<std::string> file_tensor_names() const override { return ckpt_->names(); }
    int64_t file_bytes() const override { return static_cast<int64_t>(ckpt_->file_bytes()); }
    const std::string& directory() const override { return dir_; }

private:
    at::Tensor read(const std::string& name, const SafetensorsCheckpoint::Entry& e) const {
        const SafetensorsCheckpoint::Entry* entry = &e;
        std::lock_guard<std::mutex> lock(mutex_);
        auto cached = converted_.find(entry->info);
        if (cached != converted_.end()) return cached->second;
        bool zero_copy = false;
        // A store never hands out both a view and a conversion of one tensor (its dtype and device are
        // fixed), so the converted tensor's source pages can go back to the kernel.
        const at::ScalarType dtype = keep_in_float32(config_, options_.dtype, name) ? at::kFloat : options_.dtype;
        at::Tensor t = tensor_from_safetensors(*entry->file, *entry->info, dtype, options_.device, &zero_copy,
                                               /*release_source=*/true);
        // Converted tensors are cached so that tied names share one copy; zero-copy views cost nothing.
        if (!zero_copy) converted_.emplace(entry->info, t);
        return t;
    }

    // Counted once per checkpoint tensor (tied names share one); called without the lock held.
    void report_progress(const SafetensorsCheckpoint::Entry& entry) const {
        if (!options_.progress) return;
        int64_t read = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!read_.insert(entry.info).second) return;
            read = static_cast<int64_t>(read_.size());
        }
        if (!options_.progress(read, static_cast<int64_t>(ckpt_->names().size())))
            throw Error(ErrorKind::Cancelled, dir_, "loading cancelled");
    }

    const SafetensorsCheckpoint::Entry* find_any_spelling(const std::string& canonical) const {
        for (const auto& s : spellings(canonical))
            if (const auto* e = ckpt_->find(s)) return e;
        return nullptr;
    }

    const SafetensorsCheckpoint::Entry* resolve(const std::string& name) const {
        if (const auto* e = ckpt_->find(name)) return e;
        const std::string canonical = canonical_name(config_.family, name);
        if (const auto* e = find_any_spelling(canonical)) return e;
        if (std::find(tied_.begin(), tied_.end(), canonical) != tied_.end()) {
            for (const auto& member : tied_)
                if (const auto* e = find_any_spelling(member)) return e;
        }
        return nullptr;
    }

    std::string dir_;
    std::shared_ptr<SafetensorsCheckpoint> ckpt_;
    ModelConfig config_;
    WeightLoadOptions options_;
    std::vector<std::string> tied_;
    mutable std::mutex mutex_;
    mutable std::unordered_map<const io::TensorInfo*, at::Tensor> converted_;
    mutable std::unordered_set<const io::TensorInfo*> read_;   // for progress
};

}  // namespace

std::shared_ptr<WeightStore> WeightStore::open(const std::string& dir, const ModelConfig& config,
                                               const WeightLoadOptions& options) {
    auto ckpt = io::open_model_checkpoint(dir, options.allow_pickle);
    return std::make_shared<SafetensorsWeightStore>(dir, std::move(ckpt), config, options);
}

}  // namespace lorascope::weights
