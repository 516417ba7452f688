#include "tokenizer/spm_processor.h"

#include "lorascope/error.h"
#include "tokenizer/metaspace_pipeline.h"
#include "tokenizer/unicode.h"

namespace lorascope::tokenizer {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";
const std::string kReplacement = "\xEF\xBF\xBD";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A whole, well-formed character at the start of text (SentencePiece's IsValidDecodeUTF8).
bool valid_char(std::string_view text, size_t* len) {
    const char32_t cp = utf8_next(text, 0, len);
    return cp != 0xFFFD || starts_with(text, kReplacement);
}

}  // namespace

SpmProcessor::SpmProcessor(const std::string& path) : file_(SpmModelFile::load(path)) {
    if (file_.trainer.model_type != SpmTrainerSpec::Unigram)
        throw Error(ErrorKind::Unsupported, path, "only Unigram SentencePiece models are supported here (this one is type " +
                                                      std::to_string(file_.trainer.model_type) + ")");
    if (file_.denormalizer && !file_.denormalizer->precompiled_charsmap.empty())
        throw Error(ErrorKind::Unsupported, path, "SentencePiece models with a denormalizer are not supported");
    model_ = std::make_unique<UnigramModel>(file_.pieces, file_.unk_id, file_.types);
    if (!file_.normalizer.precompiled_charsmap.empty())
        charsmap_ = std::make_unique<PrecompiledNormalizer>(file_.normalizer.precompiled_charsmap, path);
    for (size_t id = 0; id < file_.pieces.size(); ++id)
        if (file_.types[id] == SpmModelFile::UserDefined) user_defined_.push_back(file_.pieces[id].first);
}

std::pair<std::string_view, size_t> SpmProcessor::normalize_prefix(std::string_view input) const {
    size_t longest = 0;  // user-defined symbols pass through unnormalized
    for (const std::string& symbol : user_defined_)
        if (symbol.size() > longest && starts_with(input, symbol)) longest = symbol.size();
    if (longest > 0) return {input.substr(0, longest), longest};
    if (charsmap_) {
        size_t length = 0;
        if (auto replaced = charsmap_->longest_prefix(input, &length)) return {*replaced, length};
    }
    size_t len;
    if (!valid_char(input, &len)) return {kReplacement, 1};
    return {input.substr(0, len), len};
}

std::string SpmProcessor::normalize(std::string_view input) const {
    const SpmNormalizerSpec& spec = file_.normalizer;
    const bool suffix = file_.trainer.treat_whitespace_as_suffix;
    if (spec.remove_extra_whitespaces) {  // leading spaces go
        while (!input.empty()) {
            const auto [piece, length] = normalize_prefix(input);
            if (piece != " ") break;
            input.remove_prefix(length);
        }
    }
    if (input.empty()) return {};
    const std::string space = spec.escape_whitespaces ? kMetaspace : " ";
    std::string out;
    if (!suffix && spec.add_dummy_prefix) out += space;
    bool previous_space = spec.remove_extra_whitespaces;
    while (!input.empty()) {
        auto [piece, length] = normalize_prefix(input);
        while (previous_space && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
        if (!piece.empty()) {
            for (char c : piece) {
                if (c == ' ') out += space;
                else out += c;
            }
            previous_space = piece.back() == ' ';
        }
        input.remove_prefix(length);
        if (!spec.remove_extra_whitespaces) previous_space = false;
    }
    if (spec.remove_extra_whitespaces)
        while (out.size() >= space.size() && out.compare(out.size() - space.size(), space.size(), space) == 0)
            out.resize(out.size() - space.size());
    if (suffix && spec.add_dummy_prefix) out += space;
    return out;
}

std::vector<std::string> SpmProcessor::encode(std::string_view text) const {
    const std::string normalized = normalize(text);
    std::vector<std::string> pieces;
    static const char kHex[] = "0123456789ABCDEF";
    for (const UnigramModel::Span& span : model_->segment(normalized)) {
        const std::string surface = normalized.substr(span.begin, span.end - span.begin);
        if (span.id != model_->unk_id()) {
            pieces.push_back(model_->piece(span.id));
        } else if (file_.trainer.byte_fallback) {
            for (char c : surface) {
                const auto b = static_cast<unsigned char>(c);
                pieces.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
            }
        } else {
            pieces.push_back(surface);  // an unknown stretch keeps its own text
        }
    }
    return pieces;
}

std::optional<int64_t> SpmProcessor::piece_id(const std::string& piece) const {
    auto it = model_->ids().find(piece);
    if (it == model_->ids().end()) return std::nullopt;
    return it->second;
}

void SpmProcessor::decode_finish(DecodeState& state, std::string& out) const {
    // A byte run: each character that is valid UTF-8 as it stands, else U+FFFD per byte.
    std::string_view bytes = state.bytes;
    while (!bytes.empty()) {
        size_t len;
        if (valid_char(bytes, &len)) {
            out.append(bytes.substr(0, len));
        } else {
            out += kReplacement;
            len = 1;
        }
        bytes.remove_prefix(len);
        state.text_empty = false;
    }
    state.bytes.clear();
}

void SpmProcessor::decode_piece(DecodeState& state, const std::string& piece, std::string& out) const {
    const auto id = piece_id(piece);
    const int type = id ? file_.types[static_cast<size_t>(*id)] : SpmModelFile::Unknown;
    if (type == SpmModelFile::Byte) {
        state.bytes += static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16));
        return;
    }
    decode_finish(state, out);
    // Once something was written or the last piece gave up a leading U+2581, no later piece does.
    if (state.bos_ws_seen || !state.text_empty) state.is_bos_ws = false;
    std::string decoded;
    bool took_bos_ws = false;
    if (type == SpmModelFile::Control) {
        // invisible
    } else if (type == SpmModelFile::Unknown) {
        decoded = id ? file_.trainer.unk_surface : piece;  // a string that is no piece reads as itself
    } else {
        std::string_view rest = piece;
        const SpmNormalizerSpec& spec = file_.normalizer;
        if (state.is_bos_ws && (spec.add_dummy_prefix || spec.remove_extra_whitespaces) && starts_with(rest, kMetaspace)) {
            rest.remove_prefix(kMetaspace.size());
            // Removing extra whitespace removes every leading one, so the next piece may lose its own.
            took_bos_ws = !spec.remove_extra_whitespaces;
        }
        decoded = metaspace_to_spaces(rest);
    }
    state.bos_ws_seen = took_bos_ws;
    if (!decoded.empty()) state.text_empty = false;
    out += decoded;
}

}  // namespace lorascope::tokenizer
