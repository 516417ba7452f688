#include "tokenizer/spm_converters.h"

#include "lorascope/error.h"
#include "tokenizer/language_codes.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <unordered_map>

namespace lorascope::tokenizer {

namespace {

using Vocab = std::vector<std::pair<std::string, double>>;

std::string token_name(const HfTokenizerConfig& config, const char* key, const char* fallback) {
    auto it = config.special_tokens.find(key);
    return it == config.special_tokens.end() ? fallback : it->second.content;
}

// The slow class's add_prefix_space: the config's, None (falsy) where it is written as null, else
// the class default (true).
bool slow_add_prefix_space(const HfTokenizerConfig& config) {
    return config.add_prefix_space.value_or(!config.add_prefix_space_null);
}

// transformers' _get_prepend_scheme: add_prefix_space gives "always", or "first" where the class
// is non-legacy; without it, "never". Only T5's and Llama's slow classes have either attribute.
PrependScheme prepend_scheme(const HfTokenizerConfig& config, bool class_has_attributes) {
    if (!class_has_attributes) return PrependScheme::Always;
    if (!slow_add_prefix_space(config)) return PrependScheme::Never;
    return !config.legacy.value_or(true) ? PrependScheme::First : PrependScheme::Always;
}

// The vocabulary layout of each converter's vocab() method.
Vocab t5_vocab(const SpmModelFile& file, const HfTokenizerConfig& config) {
    Vocab vocab = file.pieces;
    const int extra = config.extra_ids.value_or(100);
    for (int i = extra - 1; i >= 0; --i) vocab.emplace_back("<extra_id_" + std::to_string(i) + ">", 0.0);
    return vocab;
}

Vocab pegasus_vocab(const SpmModelFile& file, const HfTokenizerConfig& config) {
    Vocab vocab = {{token_name(config, "pad_token", "<pad>"), 0.0}, {token_name(config, "eos_token", "</s>"), 0.0}};
    // PegasusConverter adds the mask tokens where the slow class gives them ids below the offset,
    // which it does exactly when mask_token_sent is set.
    if (config.mask_token_sent) {
        vocab.emplace_back(*config.mask_token_sent, 0.0);
        if (config.special_tokens.count("mask_token")) vocab.emplace_back(config.special_tokens.at("mask_token").content, 0.0);
    }
    for (int i = 2; i < config.offset.value_or(103); ++i) vocab.emplace_back("<unk_" + std::to_string(i) + ">", -100.0);
    vocab.insert(vocab.end(), file.pieces.begin() + std::min<size_t>(2, file.pieces.size()), file.pieces.end());
    return vocab;
}

Vocab fairseq_vocab(const SpmModelFile& file, bool mbart50) {
    Vocab vocab = {{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
    vocab.insert(vocab.end(), file.pieces.begin() + std::min<size_t>(3, file.pieces.size()), file.pieces.end());
    if (mbart50) {
        for (const std::string& code : mbart50_language_codes()) vocab.emplace_back(code, 0.0);
        vocab.emplace_back("<mask>", 0.0);
    }
    return vocab;
}

Vocab llama_vocab(const SpmModelFile& file) {
    // LlamaConverter names ids 0-2 as the slow tokenizer does, which is the model file's pieces.
    return file.pieces;
}

// The normalizer and pre-tokenizer every SpmConverter but Llama's writes.
MetaspacePipeline spm_pipeline(const SpmModelFile& file, const HfTokenizerConfig& config, bool class_has_attributes,
                               bool whitespace_split, const std::string& path) {
    return MetaspacePipeline::from_spm_converter(file.normalizer.precompiled_charsmap,
                                                 prepend_scheme(config, class_has_attributes), whitespace_split, path);
}

void set_eos_suffix(SpmConversion& c, const HfTokenizerConfig& config) {
    const std::string eos = token_name(config, "eos_token", "</s>");
    for (size_t id = 0; id < c.vocab.size(); ++id)
        if (c.vocab[id].first == eos) {
            c.post.suffix = {static_cast<int64_t>(id)};
            c.post.name = "TemplateProcessing($A " + eos + ")";
            return;
        }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> generate_spm_merges(const SpmModelFile& file, const Vocab& vocab_scores) {
    std::unordered_map<std::string, int64_t> pieces;
    pieces.reserve(file.pieces.size());
    for (size_t id = 0; id < file.pieces.size(); ++id) pieces[file.pieces[id].first] = static_cast<int64_t>(id);
    // dict(vocab_scores): the first position of each entry, with its last score.
    std::unordered_map<std::string, size_t> position;
    Vocab entries;
    for (const auto& [piece, score] : vocab_scores) {
        auto [it, inserted] = position.emplace(piece, entries.size());
        if (inserted) entries.emplace_back(piece, score);
        else entries[it->second].second = score;
    }
    struct Merge {
        std::string left, right;
        double score;
        size_t left_chars, right_chars;
    };
    std::vector<Merge> merges;
    for (const auto& [entry, score] : entries) {
        std::vector<Merge> local;
        size_t chars = 0;
        std::vector<size_t> bounds;
        for (size_t pos = 0, len; pos < entry.size(); pos += len, ++chars) {
            utf8_next(entry, pos, &len);
            if (pos > 0) bounds.push_back(pos);
        }
        for (size_t k = 0; k < bounds.size(); ++k) {
            std::string left = entry.substr(0, bounds[k]), right = entry.substr(bounds[k]);
            if (pieces.count(left) && pieces.count(right)) local.push_back({std::move(left), std::move(right), score, k + 1, chars - k - 1});
        }
        std::sort(local.begin(), local.end(), [&](const Merge& a, const Merge& b) {
            const int64_t al = pieces.at(a.left), bl = pieces.at(b.left);
            return al != bl ? al < bl : pieces.at(a.right) < pieces.at(b.right);
        });
        for (Merge& m : local) merges.push_back(std::move(m));
    }
    // sorted(..., key=(score, len(left), len(right)), reverse=True): descending, stable.
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.left_chars != b.left_chars) return a.left_chars > b.left_chars;
        return a.right_chars > b.right_chars;
    });
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (Merge& m : merges) out.emplace_back(std::move(m.left), std::move(m.right));
    return out;
}

SpmConversion convert_spm_model(const SpmModelFile& file, const HfTokenizerConfig& config, const std::string& path) {
    SpmConversion c;
    const int unk = file.trainer.unk_id;
    switch (config.family) {
        case TokenizerFamily::T5:
            c.converter = "T5Converter";
            c.vocab = t5_vocab(file, config);
            c.unk_id = unk;
            c.pipeline = spm_pipeline(file, config, true, false, path);
            set_eos_suffix(c, config);
            break;
        case TokenizerFamily::Pegasus:
            c.converter = "PegasusConverter";
            c.vocab = pegasus_vocab(file, config);
            c.unk_id = unk + config.offset.value_or(103);
            c.pipeline = spm_pipeline(file, config, false, true, path);
            set_eos_suffix(c, config);
            break;
        case TokenizerFamily::MBart50: case TokenizerFamily::Nllb:
            c.converter = config.family == TokenizerFamily::MBart50 ? "MBart50Converter" : "NllbConverter";
            c.vocab = fairseq_vocab(file, config.family == TokenizerFamily::MBart50);
            c.unk_id = 3;
            c.pipeline = spm_pipeline(file, config, false, false, path);
            break;
        case TokenizerFamily::Llama: {
            c.converter = "LlamaConverter";
            c.vocab = llama_vocab(file);
            c.unk_id = 0;
            const bool prefix = slow_add_prefix_space(config);
            c.pipeline = MetaspacePipeline::llama(config.legacy.value_or(true), prefix);
            c.decoder.kind = SpmDecoder::Kind::Fused;
            c.decoder.byte_fallback = true;
            c.decoder.strip_first_space = prefix;
            break;
        }
        default:
            throw Error(ErrorKind::Unsupported, path,
                        std::string("no converter for a SentencePiece model of tokenizer family '") + to_string(config.family) +
                            "' (T5/mT5, Pegasus, mBART-50, NLLB and Llama/Mistral are supported)");
    }
    if (config.family != TokenizerFamily::Llama) {
        c.decoder.kind = SpmDecoder::Kind::Metaspace;
        c.decoder.drop_first_metaspace = c.pipeline.prepend_scheme() != PrependScheme::Never;
    }
    if (c.unk_id < 0 || c.unk_id >= static_cast<int64_t>(c.vocab.size()))
        throw Error(ErrorKind::Format, path, "the unknown piece's id " + std::to_string(c.unk_id) + " is outside the vocabulary");
    if (file.trainer.model_type == SpmTrainerSpec::Bpe) {
        std::unordered_map<std::string, int64_t> ids;
        for (size_t id = 0; id < c.vocab.size(); ++id) ids[c.vocab[id].first] = static_cast<int64_t>(id);
        BpeOptions options;
        options.unk_token = file.trainer.unk_piece;
        options.fuse_unk = true;
        options.byte_fallback = config.family == TokenizerFamily::Llama;
        c.bpe = std::make_unique<BpeModel>(std::move(ids), generate_spm_merges(file, c.vocab), path, std::move(options));
    } else if (file.trainer.model_type != SpmTrainerSpec::Unigram) {
        throw Error(ErrorKind::Unsupported, path, "SentencePiece model type " + std::to_string(file.trainer.model_type) +
                                                      " is not supported (Unigram or BPE)");
    }
    // SpmConverter adds control pieces as special tokens and user-defined ones as plain tokens.
    for (size_t id = 0; id < file.pieces.size(); ++id) {
        const int type = file.types[id];
        if (type != SpmModelFile::Control && type != SpmModelFile::UserDefined) continue;
        AddedToken token;
        token.content = file.pieces[id].first;
        token.special = type == SpmModelFile::Control;
        c.added.push_back(token);
    }
    return c;
}

}  // namespace lorascope::tokenizer
