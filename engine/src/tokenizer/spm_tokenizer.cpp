#include "tokenizer/spm_tokenizer.h"

#include "lorascope/error.h"

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary

// tokenizer.json components that the SentencePiece model reproduces; anything else would make
// Hugging Face's pipeline differ from ours, so it is refused rather than silently ignored.
void check_components(const nlohmann::json& json, const std::string& path) {
    const std::string model = json.at("model").value("type", "Unigram");  // older files omit it
    if (model != "Unigram") throw Error(ErrorKind::Unsupported, path, "model of type '" + model + "' next to spiece.model is not supported");
    if (json.contains("normalizer") && !json["normalizer"].is_null()) {
        const std::string type = json["normalizer"].value("type", "");
        if (type != "Precompiled")
            throw Error(ErrorKind::Unsupported, path, "normalizer of type '" + type + "' is not supported with spiece.model");
    }
    if (json.contains("pre_tokenizer") && !json["pre_tokenizer"].is_null()) {
        const auto& pre = json["pre_tokenizer"];
        std::vector<std::string> types;
        if (pre.value("type", "") == "Sequence")
            for (const auto& p : pre.at("pretokenizers")) types.push_back(p.value("type", ""));
        else
            types.push_back(pre.value("type", ""));
        for (const std::string& type : types)
            if (type != "WhitespaceSplit" && type != "Metaspace")
                throw Error(ErrorKind::Unsupported, path, "pre_tokenizer of type '" + type + "' is not supported with spiece.model");
    }
}

}  // namespace

SpmTokenizer::SpmTokenizer(std::unique_ptr<SpmProcessor> processor) : processor_(std::move(processor)) {
    piece_ids_.reserve(static_cast<size_t>(processor_->piece_size()));
    for (int i = 0; i < processor_->piece_size(); ++i) piece_ids_.emplace(processor_->piece(i), i);
}

std::unique_ptr<SpmTokenizer> SpmTokenizer::load(const std::string& dir, const nlohmann::json* tokenizer_json,
                                                 HfTokenizerConfig config) {
    const std::string model_path = dir + "/spiece.model";
    std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::make_unique<SpmProcessor>(model_path)));
    if (config.family == TokenizerFamily::Unknown) config.family = TokenizerFamily::T5;
    apply_family_defaults(config);

    if (tokenizer_json) {
        const std::string path = dir + "/tokenizer.json";
        try {
            check_components(*tokenizer_json, path);
            const auto& decoder = tokenizer_json->contains("decoder") ? (*tokenizer_json)["decoder"] : nlohmann::json();
            if (!decoder.is_object() || decoder.value("type", "") != "Metaspace" ||
                decoder.value("replacement", kMetaspace) != kMetaspace)
                throw Error(ErrorKind::Unsupported, path, "decoder other than Metaspace('\u2581') is not supported with spiece.model");
            tok->strip_first_space_ = decoder.value("prepend_scheme", std::string("always")) != "never" &&
                                      decoder.value("add_prefix_space", true);
            tok->post_ = PostProcessor::from_json(
                tokenizer_json->contains("post_processor") ? (*tokenizer_json)["post_processor"] : nlohmann::json(), path);
            for (const auto& t : tokenizer_json->value("added_tokens", nlohmann::json::array())) {
                AddedToken token;
                token.id = t.at("id").get<int64_t>();
                token.content = t.at("content").get<std::string>();
                token.special = t.value("special", false);
                token.lstrip = t.value("lstrip", false);
                token.rstrip = t.value("rstrip", false);
                token.single_word = t.value("single_word", false);
                token.normalized = t.value("normalized", false);
                tok->added_.add(token);
            }
        } catch (const nlohmann::json::exception& e) {
            throw Error(ErrorKind::Format, path, std::string("malformed tokenizer.json: ") + e.what());
        }
    } else {
        // As transformers' T5Converter: extra ids follow the pieces in reverse (<extra_id_0> last)
        // and the post-processor appends </s>.
        const int extra = config.family == TokenizerFamily::T5 ? config.extra_ids.value_or(100) : 0;
        const int64_t base = tok->processor_->piece_size();
        if (config.added_tokens_decoder.empty()) {
            for (int i = 0; i < extra; ++i) {
                AddedToken token;
                token.content = "<extra_id_" + std::to_string(i) + ">";
                token.id = base + extra - 1 - i;
                token.special = true;
                tok->added_.add(token);
            }
        }
        auto eos = config.special_tokens.find("eos_token");
        if (eos != config.special_tokens.end()) {
            if (auto id = tok->model_token_to_id(eos->second.content)) {
                tok->post_.suffix = {*id};
                tok->post_.name = "append eos";
            }
        }
    }
    tok->finish_setup(config);
    tok->description_ = std::string("SentencePiece from spiece.model") + (tokenizer_json ? " with tokenizer.json's pipeline" : "") +
                        " (post-processor " + tok->post_.name + ", family " + to_string(config.family) +
                        ", module " + tok->processor_->module_path() + ")";
    return tok;
}

void SpmTokenizer::encode_text(std::string_view text, std::vector<int64_t>& out) const {
    for (int id : processor_->encode(std::string(text))) out.push_back(id);
}

const std::string* SpmTokenizer::model_token(int64_t id) const {
    if (id < 0 || id >= processor_->piece_size()) return nullptr;
    return &processor_->piece(static_cast<int>(id));
}

std::optional<int64_t> SpmTokenizer::model_token_to_id(const std::string& token) const {
    auto it = piece_ids_.find(token);
    if (it == piece_ids_.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> SpmTokenizer::token_bytes(int64_t id, bool first) const {
    const std::string* token = token_string(id);
    if (!token) return std::nullopt;
    // tokenizers' Metaspace decoder: every U+2581 becomes a space, and the first token loses one
    // leading space (the one the encoder prepended).
    std::string text;
    text.reserve(token->size());
    size_t pos = 0;
    while (pos < token->size()) {
        if (token->compare(pos, kMetaspace.size(), kMetaspace) == 0) {
            text += ' ';
            pos += kMetaspace.size();
        } else {
            text += (*token)[pos++];
        }
    }
    if (first && strip_first_space_ && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

}  // namespace lorascope::tokenizer
