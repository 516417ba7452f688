#include "tokenizer/tokenizer_base.h"

#include "lorascope/error.h"
#include "tokenizer/language_codes.h"
#include "tokenizer/unicode.h"

#include <algorithm>

namespace lorascope::tokenizer {

std::optional<unsigned char> byte_fallback_value(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return std::nullopt;
    auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    const char a = token[3], b = token[4];
    if (a == '+') {  // Rust's from_str_radix takes a sign before a single digit
        const int v = digit(b);
        if (v < 0) return std::nullopt;
        return static_cast<unsigned char>(v);
    }
    const int hi = digit(a), lo = digit(b);
    if (hi < 0 || lo < 0) return std::nullopt;
    return static_cast<unsigned char>(hi * 16 + lo);
}

namespace {

// Decodes each kept id's token_bytes in turn; a run of byte-fallback tokens becomes its bytes if
// they are UTF-8 as a whole, else one U+FFFD per byte, as tokenizers' ByteFallback decoder does.
class TokenBytesDecoder : public Tokenizer::Decoder {
public:
    TokenBytesDecoder(const TokenizerBase& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}

    void push(int64_t id, std::string& out) override {
        if (skip_special_ && tok_.is_special(id)) return;
        if (auto byte = tok_.fallback_byte(id)) {
            if (run_.empty()) run_is_first_ = first_;
            run_ += static_cast<char>(*byte);
            first_ = false;
            return;
        }
        auto piece = tok_.token_bytes(id, first_);
        if (!piece) return;  // unknown ids are dropped, as tokenizers does
        flush(out);
        first_ = false;
        out += *piece;
    }

    void finish(std::string& out) override { flush(out); }

private:
    void flush(std::string& out) {
        if (run_.empty()) return;
        std::string text = utf8_lossy(run_) == run_ ? run_ : std::string();
        if (text.empty())
            for (size_t i = 0; i < run_.size(); ++i) text += "\xEF\xBF\xBD";
        if (run_is_first_ && tok_.strips_first_space() && text[0] == ' ') text.erase(0, 1);
        out += text;
        run_.clear();
    }

    const TokenizerBase& tok_;
    bool skip_special_;
    bool first_ = true;
    bool run_is_first_ = false;
    std::string run_;
};

}  // namespace

std::unique_ptr<Tokenizer::Decoder> TokenizerBase::make_decoder(bool skip_special_tokens) const {
    return std::make_unique<TokenBytesDecoder>(*this, skip_special_tokens);
}

std::optional<unsigned char> TokenizerBase::fallback_byte(int64_t) const { return std::nullopt; }

std::vector<int64_t> TokenizerBase::encode_plain(std::string_view text, bool target) const {
    std::vector<int64_t> ids;
    for (const TextSegment& raw : added_.split_raw(text)) {
        if (raw.token_id >= 0) {
            ids.push_back(raw.token_id);
            continue;
        }
        const std::string normalized = normalize(raw.text);
        const bool raw_at_start = raw.text.data() == text.data();
        for (const TextSegment& segment : added_.split_normalized(normalized)) {
            if (segment.token_id >= 0) ids.push_back(segment.token_id);
            else encode_text(segment.text, raw_at_start && segment.text.data() == normalized.data(), target, ids);
        }
    }
    return ids;
}

std::vector<int64_t> TokenizerBase::encode(const std::string& text, const EncodeOptions& options) const {
    std::vector<int64_t> ids = encode_plain(text, options.target);
    add_special_tokens(ids, options);
    return ids;
}

void TokenizerBase::add_special_tokens(std::vector<int64_t>& ids, const EncodeOptions& options) const {
    if (languages_.placement == LanguagePlacement::None) {
        if (!options.src_lang.empty() || !options.tgt_lang.empty())
            throw Error(ErrorKind::InvalidArgument, dir_,
                        languages_.codes.empty()
                            ? "this tokenizer has no language codes (src_lang / tgt_lang are for mBART-50 and NLLB)"
                            : "this tokenizer takes no src_lang / tgt_lang: its language codes (" +
                                  tokenizer::some_language_codes(languages_.codes) + ") are written at the start of the text");
        if (options.add_special_tokens) post_.apply(ids);
        return;
    }
    auto code_id = [&](const std::string& given, const std::string& fallback, const char* what) {
        const std::string& code = given.empty() ? fallback : given;
        if (code.empty())
            throw Error(ErrorKind::InvalidArgument, dir_, std::string("no ") + what + " given and tokenizer_config.json names none");
        auto id = language_token_id(code);
        if (!id)
            throw Error(ErrorKind::InvalidArgument, dir_,
                        std::string(what) + " '" + code + "' is not one of this tokenizer's " +
                            std::to_string(languages_.codes.size()) + " language codes (" +
                            tokenizer::some_language_codes(languages_.codes) + ")");
        return *id;
    };
    const int64_t lang = options.target ? code_id(options.tgt_lang, languages_.default_target, "tgt_lang")
                                        : code_id(options.src_lang, languages_.default_source, "src_lang");
    if (!options.target && !options.tgt_lang.empty()) (void)code_id(options.tgt_lang, {}, "tgt_lang");
    if (!options.add_special_tokens) return;
    const int64_t eos = special_ids_.eos.value_or(-1);
    if (languages_.placement == LanguagePlacement::PrefixCode) {
        ids.insert(ids.begin(), lang);
        if (eos >= 0) ids.push_back(eos);
    } else {
        if (eos >= 0) ids.push_back(eos);
        ids.push_back(lang);
    }
}

int64_t TokenizerBase::vocab_size() const {
    int64_t size = model_vocab_size();
    for (const AddedToken& token : added_.tokens()) size = std::max(size, token.id + 1);
    return size;
}

std::optional<int64_t> TokenizerBase::token_to_id(const std::string& token) const {
    if (auto id = added_.id_of(token)) return id;
    return model_token_to_id(token);
}

const std::string* TokenizerBase::token_string(int64_t id) const {
    if (const AddedToken* added = added_.by_id(id)) return &added->content;
    return model_token(id);
}

std::string TokenizerBase::id_to_token(int64_t id) const {
    const std::string* token = token_string(id);
    return token ? *token : std::string();
}

bool TokenizerBase::is_special(int64_t id) const {
    const AddedToken* added = added_.by_id(id);
    return added && added->special;
}

namespace {

// The additional special tokens a class adds on load beyond what the files list.
std::vector<AddedToken> class_additional_tokens(const HfTokenizerConfig& config) {
    std::vector<AddedToken> tokens = config.additional_special_tokens;
    auto add_codes = [&](const std::vector<std::string>& codes, bool only_if_none) {
        if (only_if_none && !tokens.empty()) return;
        for (const std::string& code : codes) {
            if (std::any_of(tokens.begin(), tokens.end(), [&](const AddedToken& t) { return t.content == code; })) continue;
            AddedToken token;
            token.content = code;
            token.special = true;
            tokens.push_back(token);
        }
    };
    if (config.family == TokenizerFamily::T5 &&
        std::none_of(tokens.begin(), tokens.end(), [](const AddedToken& t) { return t.content.find("<extra_id_") != std::string::npos; })) {
        std::vector<std::string> extra;  // T5Tokenizer's <extra_id_0> ... in order
        for (int i = 0; i < config.extra_ids.value_or(100); ++i) extra.push_back("<extra_id_" + std::to_string(i) + ">");
        add_codes(extra, false);
    }
    if (config.family == TokenizerFamily::MBart50) add_codes(mbart50_language_codes(), false);
    if (config.family == TokenizerFamily::Nllb) add_codes(nllb_language_codes(), true);
    if (config.family == TokenizerFamily::Pegasus && tokens.empty()) {
        std::vector<std::string> names;
        if (config.mask_token_sent) names.push_back(*config.mask_token_sent);
        for (int i = 2; i < config.offset.value_or(103); ++i) names.push_back("<unk_" + std::to_string(i) + ">");
        add_codes(names, false);
    }
    return tokens;
}

}  // namespace

void TokenizerBase::finish_setup(const HfTokenizerConfig& config) {
    int64_t next_id = vocab_size();
    auto add = [&](AddedToken token) {
        if (added_.id_of(token.content)) return;
        if (token.id < 0) {
            if (auto id = model_token_to_id(token.content)) token.id = *id;
            else token.id = next_id++;
        }
        added_.add(token);
        next_id = std::max(next_id, token.id + 1);
    };
    for (const AddedToken& token : config.added_tokens_decoder) add(token);
    // transformers' SPECIAL_TOKENS_ATTRIBUTES order decides the ids of tokens new to the vocabulary.
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        auto it = config.special_tokens.find(key);
        if (it != config.special_tokens.end()) add(it->second);
    }
    for (const AddedToken& token : class_additional_tokens(config)) add(token);

    auto id_of = [&](const char* key) -> std::optional<int64_t> {
        auto it = config.special_tokens.find(key);
        if (it == config.special_tokens.end()) return std::nullopt;
        return token_to_id(it->second.content);
    };
    special_ids_.bos = id_of("bos_token");
    special_ids_.eos = id_of("eos_token");
    special_ids_.pad = id_of("pad_token");
    special_ids_.unk = id_of("unk_token");
    switch (config.family) {
        case TokenizerFamily::T5: case TokenizerFamily::Marian: case TokenizerFamily::Pegasus:
            special_ids_.decoder_start = special_ids_.pad;
            break;
        case TokenizerFamily::Bart: case TokenizerFamily::MBart50: case TokenizerFamily::Nllb:
            special_ids_.decoder_start = special_ids_.eos;
            break;
        default: break;
    }
    if (config.decoder_start_token_id) special_ids_.decoder_start = config.decoder_start_token_id;
    if (config.clean_up_tokenization_spaces) clean_up_ = *config.clean_up_tokenization_spaces;
}

void TokenizerBase::apply_class_post_processor(const HfTokenizerConfig& config) {
    if (config.family == TokenizerFamily::Llama) {
        // LlamaTokenizerFast.update_post_processor: replaces tokenizer.json's on every load.
        post_ = PostProcessor();
        post_.name = "TemplateProcessing(add_bos_token / add_eos_token)";
        if (config.add_bos_token.value_or(true) && special_ids_.bos) post_.prefix = {*special_ids_.bos};
        if (config.add_eos_token.value_or(false) && special_ids_.eos) post_.suffix = {*special_ids_.eos};
        return;
    }
    if (config.family != TokenizerFamily::MBart50 && config.family != TokenizerFamily::Nllb) return;
    const bool mbart = config.family == TokenizerFamily::MBart50;
    languages_.codes.clear();
    if (mbart) {
        languages_.codes = mbart50_language_codes();
    } else {
        for (const AddedToken& token : class_additional_tokens(config)) languages_.codes.push_back(token.content);
    }
    languages_.placement = !mbart && config.legacy_behaviour ? LanguagePlacement::SuffixCode : LanguagePlacement::PrefixCode;
    languages_.default_source = config.src_lang.value_or(mbart ? "en_XX" : "eng_Latn");
    languages_.default_target = config.tgt_lang.value_or("");
    post_.name = mbart ? "mBART-50 language codes" : "NLLB language codes";
}

}  // namespace lorascope::tokenizer
