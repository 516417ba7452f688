#include "tokenizer/marian_tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/metaspace_pipeline.h"
#include "tokenizer/unicode.h"

#include <algorithm>

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";

// The match of ">>.+<<" that starts at p, greedy: up to the last "<<" on the same line that leaves
// at least one character between; npos where there is none.
size_t code_end(std::string_view text, size_t p) {
    if (text.compare(p, 2, ">>") != 0) return std::string_view::npos;
    const size_t line_end = std::min(text.find('\n', p + 2), text.size());
    if (line_end < p + 5) return std::string_view::npos;
    const size_t q = text.rfind("<<", line_end - 2);
    return q != std::string_view::npos && q >= p + 3 ? q + 2 : std::string_view::npos;
}

// Python's str.isspace, which strip() uses: White_Space plus the separators U+001C..U+001F.
bool python_space(char32_t cp) { return is_whitespace(cp) || (cp >= 0x1C && cp <= 0x1F); }

// MarianTokenizer.convert_tokens_to_string, one id at a time: target.spm decodes the pieces
// between special tokens, each special token reads as itself plus a space, U+2581 becomes a space
// and the whole is stripped (leading whitespace dropped, trailing whitespace held until text follows).
class MarianDecoder : public Tokenizer::Decoder {
public:
    MarianDecoder(const MarianTokenizer& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}

    void push(int64_t id, std::string& out) override {
        const std::string token = tok_.token_for(id);
        // transformers 4.46's _decode skips by id and again by the token's text: with separate
        // vocabularies a source-only id reads as <unk> and is skipped too.
        if (skip_special_ && (tok_.is_special(id) || tok_.is_special_token(token))) return;
        std::string text;
        if (tok_.is_special_token(token)) {
            tok_.target_model().decode_finish(state_, text);
            text += token + " ";
            state_ = {};
        } else {
            tok_.target_model().decode_piece(state_, token, text);
        }
        emit(text, out);
    }

    void finish(std::string& out) override {
        std::string text;
        tok_.target_model().decode_finish(state_, text);
        emit(text, out);
        held_.clear();
    }

private:
    void emit(const std::string& text, std::string& out) {
        for (size_t pos = 0, len; pos < text.size(); pos += len) {
            char32_t cp = utf8_next(text, pos, &len);
            std::string_view ch = std::string_view(text).substr(pos, len);
            if (ch == kMetaspace) {
                cp = U' ';
                ch = " ";
            }
            if (python_space(cp)) {
                if (seen_text_) held_ += ch;
                continue;
            }
            out += held_;
            held_.clear();
            out += ch;
            seen_text_ = true;
        }
    }

    const MarianTokenizer& tok_;
    bool skip_special_;
    SpmProcessor::DecodeState state_;
    bool seen_text_ = false;
    std::string held_;  // whitespace that strip() removes unless text follows
};

}  // namespace

std::pair<std::string, std::string> split_marian_language_code(std::string_view text) {
    std::string code, rest;
    const size_t first = code_end(text, 0);
    if (first != std::string_view::npos) code = std::string(text.substr(0, first));
    size_t pos = 0;
    for (size_t p = text.find(">>"); p != std::string_view::npos; p = text.find(">>", p + 1)) {
        const size_t end = code_end(text, p);
        if (end == std::string_view::npos) continue;
        rest.append(text.substr(pos, p - pos));
        pos = end;
        p = end - 1;
    }
    rest.append(text.substr(pos));
    return {code, rest};
}

std::unique_ptr<MarianTokenizer> MarianTokenizer::load(const std::string& dir, HfTokenizerConfig config) {
    std::unique_ptr<MarianTokenizer> tok(new MarianTokenizer());
    config.family = TokenizerFamily::Marian;
    apply_family_defaults(config);
    tok->source_ = std::make_unique<SpmProcessor>(dir + "/source.spm");
    tok->target_ = std::make_unique<SpmProcessor>(dir + "/target.spm");
    const std::string vocab_path = dir + "/vocab.json";
    tok->encoder_ = interpreting(vocab_path, [&] { return parse_bpe_vocab(read_json_file(vocab_path), vocab_path); });
    tok->unk_token_ = config.special_tokens.at("unk_token").content;
    for (const char* key : {"unk_token", "pad_token"})
        if (!tok->encoder_.count(config.special_tokens.at(key).content))
            throw Error(ErrorKind::Format, vocab_path, std::string("the ") + key + " '" + config.special_tokens.at(key).content +
                                                           "' is not in the vocabulary");
    tok->separate_vocabs_ = config.separate_vocabs;
    const std::string decode_path = config.separate_vocabs ? dir + "/target_vocab.json" : vocab_path;
    if (config.separate_vocabs)
        tok->target_encoder_ = interpreting(decode_path, [&] { return parse_bpe_vocab(read_json_file(decode_path), decode_path); });
    const auto& decoding = config.separate_vocabs ? tok->target_encoder_ : tok->encoder_;
    int64_t max_id = -1;
    for (const auto& [token, id] : decoding) max_id = std::max(max_id, id);
    if (max_id >= 2 * static_cast<int64_t>(decoding.size()) + 1024 || std::any_of(decoding.begin(), decoding.end(), [](const auto& e) { return e.second < 0; }))
        throw Error(ErrorKind::Format, decode_path, "token ids are negative or run far past the vocabulary's size");
    tok->decoder_.resize(static_cast<size_t>(max_id + 1));
    for (const auto& [token, id] : tok->encoder_) tok->source_size_ = std::max(tok->source_size_, id + 1);
    for (const auto& [token, id] : decoding) tok->decoder_[static_cast<size_t>(id)] = token;
    if (!config.separate_vocabs) {  // the >>xx<< codes, in vocabulary order
        std::vector<std::pair<int64_t, std::string>> codes;
        for (const auto& [token, id] : tok->encoder_)
            if (token.size() > 4 && token.compare(0, 2, ">>") == 0 && token.compare(token.size() - 2, 2, "<<") == 0)
                codes.emplace_back(id, token);
        std::sort(codes.begin(), codes.end());
        for (auto& [id, token] : codes) tok->languages_.codes.push_back(std::move(token));
    }
    tok->finish_setup(config);
    if (tok->special_ids_.eos) tok->post_.suffix = {*tok->special_ids_.eos};
    tok->post_.name = "$A </s>";
    tok->dir_ = dir;
    tok->description_ = "Marian SentencePiece pair (source.spm encodes, target.spm decodes, " +
                        std::string(config.separate_vocabs ? "separate vocabularies" : "joint vocab.json") + ", " +
                        std::to_string(tok->languages_.codes.size()) + " language codes, family marian)";
    return tok;
}

int64_t MarianTokenizer::piece_to_id(const std::string& piece, bool target) const {
    if (auto id = added_.id_of(piece)) return *id;
    const auto& encoder = target && separate_vocabs_ ? target_encoder_ : encoder_;
    auto it = encoder.find(piece);
    if (it != encoder.end()) return it->second;
    auto unk = encoder.find(unk_token_);
    return unk != encoder.end() ? unk->second : encoder_.at(unk_token_);
}

void MarianTokenizer::encode_text(std::string_view text, bool, bool target, std::vector<int64_t>& out) const {
    const auto [code, rest] = split_marian_language_code(text);
    if (!code.empty()) out.push_back(piece_to_id(code, target));
    for (const std::string& piece : (target ? target_ : source_)->encode(rest)) out.push_back(piece_to_id(piece, target));
}

std::string MarianTokenizer::token_for(int64_t id) const {
    const std::string* token = token_string(id);
    return token ? *token : unk_token_;
}

bool MarianTokenizer::is_special_token(const std::string& token) const {
    const auto id = added_.id_of(token);
    return id && is_special(*id);
}

const std::string* MarianTokenizer::model_token(int64_t id) const {
    if (id < 0) return nullptr;
    if (id < static_cast<int64_t>(decoder_.size()) && !decoder_[static_cast<size_t>(id)].empty()) return &decoder_[static_cast<size_t>(id)];
    // The slow tokenizer's decoder.get(id, unk_token): ids of the source vocabulary that the
    // decoding vocabulary lacks read as <unk>.
    return id < source_size_ ? &unk_token_ : nullptr;
}

std::optional<int64_t> MarianTokenizer::model_token_to_id(const std::string& token) const {
    auto it = encoder_.find(token);
    if (it == encoder_.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> MarianTokenizer::token_bytes(int64_t id, bool first) const {
    const std::string* token = token_string(id);
    if (!token) return std::nullopt;
    std::string text = metaspace_to_spaces(*token);
    if (first && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

std::unique_ptr<Tokenizer::Decoder> MarianTokenizer::make_decoder(bool skip_special_tokens) const {
    return std::make_unique<MarianDecoder>(*this, skip_special_tokens);
}

}  // namespace lorascope::tokenizer
