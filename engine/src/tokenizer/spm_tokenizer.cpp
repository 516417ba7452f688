#include "tokenizer/spm_tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/spm_model_file.h"

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary

}  // namespace

std::unique_ptr<SpmTokenizer> SpmTokenizer::load(const std::string& dir, const nlohmann::json* tokenizer_json,
                                                 HfTokenizerConfig config) {
    const std::string model_path = dir + "/spiece.model";
    SpmModelFile file = SpmModelFile::load(model_path);
    if (file.trainer.model_type != SpmTrainerSpec::Unigram)
        throw Error(ErrorKind::Unsupported, model_path, "only Unigram SentencePiece models are supported (this one is type " +
                                                            std::to_string(file.trainer.model_type) + ")");
    if (config.family == TokenizerFamily::Unknown) config.family = TokenizerFamily::T5;
    apply_family_defaults(config);
    std::vector<std::pair<std::string, double>> pieces = file.pieces;
    const int64_t piece_count = static_cast<int64_t>(pieces.size());

    std::unique_ptr<SpmTokenizer> tok;
    if (tokenizer_json) {
        const std::string path = dir + "/tokenizer.json";
        try {
            const nlohmann::json& json = *tokenizer_json;
            const auto& model = json.at("model");
            if (model.value("type", "Unigram") != "Unigram")
                throw Error(ErrorKind::Unsupported, path, "model of type '" + model.value("type", "") + "' next to spiece.model is not supported");
            if (model.value("byte_fallback", false))
                throw Error(ErrorKind::Unsupported, path, "Unigram with byte_fallback is not supported");
            // The file's vocabulary must be spiece.model's; entries past it (T5's <extra_id_N>) join the model.
            const auto& vocab = model.at("vocab");
            for (size_t id = 0; id < vocab.size(); ++id) {
                const std::string piece = vocab[id].at(0).get<std::string>();
                if (static_cast<int64_t>(id) < piece_count) {
                    if (piece != pieces[id].first)
                        throw Error(ErrorKind::Format, path, "vocabulary entry " + std::to_string(id) + " ('" + piece +
                                                                 "') differs from spiece.model's ('" + pieces[id].first + "')");
                } else {
                    pieces.emplace_back(piece, vocab[id].at(1).get<double>());
                }
            }
            auto pipeline = MetaspacePipeline::from_json(json.contains("normalizer") ? json["normalizer"] : nlohmann::json(),
                                                         json.contains("pre_tokenizer") ? json["pre_tokenizer"] : nlohmann::json(), path);
            const int64_t unk = model.contains("unk_id") && model["unk_id"].is_number_integer() ? model["unk_id"].get<int64_t>() : file.unk_id;
            tok.reset(new SpmTokenizer(std::make_unique<UnigramModel>(std::move(pieces), unk), std::move(pipeline)));

            const auto& decoder = json.contains("decoder") ? json["decoder"] : nlohmann::json();
            if (!decoder.is_object() || decoder.value("type", "") != "Metaspace" || decoder.value("replacement", kMetaspace) != kMetaspace)
                throw Error(ErrorKind::Unsupported, path, "decoder other than Metaspace(U+2581) is not supported with spiece.model");
            tok->strip_first_space_ = decoder.contains("prepend_scheme") ? decoder["prepend_scheme"] != "never"
                                                                         : decoder.value("add_prefix_space", true);
            tok->post_ = PostProcessor::from_json(json.contains("post_processor") ? json["post_processor"] : nlohmann::json(), path);
            for (const auto& t : json.value("added_tokens", nlohmann::json::array())) tok->added_.add(added_token_from_json(t));
        } catch (const nlohmann::json::exception& e) {
            throw Error(ErrorKind::Format, path, std::string("malformed tokenizer.json: ") + e.what());
        }
    } else {
        // What transformers' T5Converter builds: extra ids follow the pieces in reverse
        // (<extra_id_0> last) with score 0, control pieces become special added tokens,
        // user-defined ones plain added tokens, and the post-processor appends </s>.
        const int extra = config.family == TokenizerFamily::T5 && config.added_tokens_decoder.empty() ? config.extra_ids.value_or(100) : 0;
        for (int i = extra - 1; i >= 0; --i) pieces.emplace_back("<extra_id_" + std::to_string(i) + ">", 0.0);
        auto pipeline = MetaspacePipeline::from_spm_converter(file.normalizer.precompiled_charsmap, model_path);
        tok.reset(new SpmTokenizer(std::make_unique<UnigramModel>(std::move(pieces), file.unk_id), std::move(pipeline)));
        for (int64_t id = 0; id < piece_count; ++id) {
            const int type = file.types[static_cast<size_t>(id)];
            if (type != SpmModelFile::Control && type != SpmModelFile::UserDefined) continue;
            AddedToken token;
            token.id = id;
            token.content = file.pieces[static_cast<size_t>(id)].first;
            token.special = type == SpmModelFile::Control;
            tok->added_.add(token);
        }
        for (int i = 0; i < extra; ++i) {
            AddedToken token;
            token.content = "<extra_id_" + std::to_string(i) + ">";
            token.id = piece_count + extra - 1 - i;
            token.special = true;
            tok->added_.add(token);
        }
        auto eos = config.special_tokens.find("eos_token");
        if (eos != config.special_tokens.end()) {
            if (auto id = tok->model_token_to_id(eos->second.content)) {
                tok->post_.suffix = {*id};
                tok->post_.name = "TemplateProcessing($A </s>)";
            }
        }
    }
    tok->finish_setup(config);
    tok->description_ = std::string("SentencePiece Unigram from spiece.model") +
                        (tokenizer_json ? " with tokenizer.json's pipeline" : " (converted as transformers does)") + " (" +
                        tok->pipeline_.describe() + ", post-processor " + tok->post_.name + ", family " +
                        to_string(config.family) + ")";
    return tok;
}

void SpmTokenizer::encode_text(std::string_view text, std::vector<int64_t>& out) const {
    std::vector<std::string> words;
    // Segments split off after an added token do not start the input (matters for prepend "first").
    pipeline_.words(text, out.empty(), words);
    for (const std::string& word : words) model_->encode_word(word, out);
}

const std::string* SpmTokenizer::model_token(int64_t id) const {
    if (id < 0 || id >= model_->size()) return nullptr;
    return &model_->piece(id);
}

std::optional<int64_t> SpmTokenizer::model_token_to_id(const std::string& token) const {
    auto it = model_->ids().find(token);
    if (it == model_->ids().end()) return std::nullopt;
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
