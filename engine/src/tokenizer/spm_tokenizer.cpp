#include "tokenizer/spm_tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/spm_converters.h"
#include "tokenizer/spm_model_file.h"

#include <nlohmann/json.hpp>

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary

const nlohmann::json& member(const nlohmann::json& json, const char* key) {
    static const nlohmann::json null;
    return json.contains(key) ? json[key] : null;
}

}  // namespace

SpmDecoder SpmDecoder::from_json(const nlohmann::json& config, const std::string& path) {
    const std::string type = config.is_object() ? config.value("type", "") : std::string();
    SpmDecoder d;
    if (type == "Metaspace" && config.value("replacement", kMetaspace) == kMetaspace) {
        d.kind = Kind::Metaspace;
        d.drop_first_metaspace = config.contains("prepend_scheme") ? config["prepend_scheme"] != "never"
                                                                   : config.value("add_prefix_space", true);
        return d;
    }
    // LlamaConverter's Sequence: Replace("▁" -> " "), ByteFallback, Fuse, then Strip(" ", 1, 0) or nothing.
    const nlohmann::json& steps = member(config, "decoders");
    size_t i = 0;
    auto next_is = [&](const char* step) { return i < steps.size() && steps[i].value("type", "") == step; };
    bool ok = type == "Sequence" && steps.is_array() && next_is("Replace") &&
              member(steps[i], "pattern").value("String", "") == kMetaspace && steps[i].value("content", "") == " ";
    if (ok) {
        d.kind = Kind::Fused;
        ++i;
        d.byte_fallback = next_is("ByteFallback");
        if (d.byte_fallback) ++i;
        ok = next_is("Fuse");
        ++i;
        if (ok && next_is("Strip")) {
            const auto& strip = steps[i++];
            ok = strip.value("content", "") == " " && strip.value("start", 0) <= 1 && strip.value("stop", 0) == 0;
            d.strip_first_space = strip.value("start", 0) == 1;
        }
        ok = ok && i == steps.size();
    }
    if (!ok)
        throw Error(ErrorKind::Unsupported, path,
                    "decoder " + config.dump() + " is not supported for a SentencePiece-style tokenizer (Metaspace, or "
                    "Replace(\\u2581 -> ' ') + ByteFallback + Fuse + Strip(' ', 1, 0))");
    return d;
}

std::string SpmDecoder::describe() const {
    if (kind == Kind::Metaspace) return drop_first_metaspace ? "Metaspace decoder" : "Metaspace decoder (never)";
    return std::string("Replace") + (byte_fallback ? "+ByteFallback" : "") + "+Fuse" + (strip_first_space ? "+Strip" : "") + " decoder";
}

void SpmTokenizer::read_json_model(const nlohmann::json& model, const std::string& path) {
    const std::string type = model.value("type", model.contains("merges") ? "BPE" : "Unigram");
    if (type == "BPE") {
        bpe_ = bpe_model_from_json(model, path, true);
        return;
    }
    if (type != "Unigram") throw Error(ErrorKind::Unsupported, path, "model of type '" + type + "' is not supported");
    if (model.value("byte_fallback", false))
        throw Error(ErrorKind::Unsupported, path, "Unigram with byte_fallback is not supported");
    std::vector<std::pair<std::string, double>> pieces;
    const auto& vocab = model.at("vocab");
    if (!vocab.is_array() || vocab.empty()) throw Error(ErrorKind::Format, path, "the Unigram vocabulary is not a non-empty list");
    pieces.reserve(vocab.size());
    for (const auto& entry : vocab) pieces.emplace_back(entry.at(0).get<std::string>(), entry.at(1).get<double>());
    const auto& unk = member(model, "unk_id");
    const int64_t unk_id = unk.is_number_integer() ? unk.get<int64_t>() : -1;
    if (unk_id < -1 || unk_id >= static_cast<int64_t>(pieces.size()))
        throw Error(ErrorKind::Format, path, "unk_id " + std::to_string(unk_id) + " is outside the Unigram vocabulary");
    unigram_ = std::make_unique<UnigramModel>(std::move(pieces), unk_id);
}

std::unique_ptr<SpmTokenizer> SpmTokenizer::from_tokenizer_json(const std::string& dir, const std::string& path,
                                                                 const nlohmann::json& json, HfTokenizerConfig config) {
    return interpreting(path, [&] {
        std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(MetaspacePipeline(), SpmDecoder()));
        tok->read_json_model(json.at("model"), path);
        tok->pipeline_ = MetaspacePipeline::from_json(member(json, "normalizer"), member(json, "pre_tokenizer"), path);
        tok->decoder_ = SpmDecoder::from_json(member(json, "decoder"), path);
        tok->post_ = PostProcessor::from_json(member(json, "post_processor"), path);
        for (const auto& t : json.value("added_tokens", nlohmann::json::array())) tok->added_.add(added_token_from_json(t));
        tok->finish(dir, std::move(config), "tokenizer.json");
        return tok;
    });
}

std::unique_ptr<SpmTokenizer> SpmTokenizer::from_model_file(const std::string& dir, const std::string& model_path,
                                                            HfTokenizerConfig config) {
    SpmModelFile file = SpmModelFile::load(model_path);
    if (config.family == TokenizerFamily::Unknown)
        config.family = model_path.size() >= 15 && model_path.compare(model_path.size() - 15, 15, "tokenizer.model") == 0
                            ? TokenizerFamily::Llama
                            : TokenizerFamily::T5;
    apply_family_defaults(config);
    SpmConversion c = convert_spm_model(file, config, model_path);
    std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(c.pipeline), c.decoder));
    if (c.bpe) tok->bpe_ = std::move(c.bpe);
    else tok->unigram_ = std::make_unique<UnigramModel>(std::move(c.vocab), c.unk_id);
    tok->post_ = std::move(c.post);
    int64_t next = tok->model_vocab_size();
    for (AddedToken& token : c.added) {
        if (auto id = tok->model_token_to_id(token.content)) token.id = *id;
        else token.id = next++;
        tok->added_.add(token);
    }
    tok->finish(dir, std::move(config), model_path.substr(model_path.rfind('/') + 1) + " (" + c.converter + ")");
    return tok;
}

void SpmTokenizer::finish(const std::string& dir, HfTokenizerConfig config, const std::string& source) {
    apply_family_defaults(config);
    finish_setup(config);
    apply_class_post_processor(config);
    dir_ = dir;
    description_ = std::string(bpe_ ? "SentencePiece BPE" : "SentencePiece Unigram") + " from " + source + " (" +
                   pipeline_.describe() + ", " + decoder_.describe() + ", post-processor " + post_.name + ", family " +
                   to_string(config.family) + ")";
}

void SpmTokenizer::encode_text(std::string_view normalized, bool at_start, bool, std::vector<int64_t>& out) const {
    std::vector<std::string> words;
    pipeline_.words(normalized, at_start, words);
    for (const std::string& word : words) {
        if (bpe_) bpe_->encode_word(word, out);
        else unigram_->encode_word(word, out);
    }
}

const std::string* SpmTokenizer::model_token(int64_t id) const {
    if (bpe_) {
        const auto& tokens = bpe_->id_to_token();
        if (id < 0 || id >= static_cast<int64_t>(tokens.size()) || tokens[static_cast<size_t>(id)].empty()) return nullptr;
        return &tokens[static_cast<size_t>(id)];
    }
    if (id < 0 || id >= unigram_->size()) return nullptr;
    return &unigram_->piece(id);
}

std::optional<int64_t> SpmTokenizer::model_token_to_id(const std::string& token) const {
    const auto& ids = bpe_ ? bpe_->vocab() : unigram_->ids();
    auto it = ids.find(token);
    if (it == ids.end()) return std::nullopt;
    return it->second;
}

int64_t SpmTokenizer::model_vocab_size() const {
    return bpe_ ? static_cast<int64_t>(bpe_->id_to_token().size()) : unigram_->size();
}

std::optional<unsigned char> SpmTokenizer::fallback_byte(int64_t id) const {
    if (!decoder_.byte_fallback) return std::nullopt;
    const std::string* token = token_string(id);
    return token ? byte_fallback_value(*token) : std::nullopt;
}

std::optional<std::string> SpmTokenizer::token_bytes(int64_t id, bool first) const {
    const std::string* token = token_string(id);
    if (!token) return std::nullopt;
    if (auto byte = fallback_byte(id)) return std::string(1, static_cast<char>(*byte));
    if (decoder_.kind == SpmDecoder::Kind::Metaspace)  // the first token loses every U+2581
        return metaspace_to_spaces(*token, first && decoder_.drop_first_metaspace);
    std::string text = metaspace_to_spaces(*token);
    if (first && decoder_.strip_first_space && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

}  // namespace lorascope::tokenizer
