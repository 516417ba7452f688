#include "tokenizer/tokenizer_base.h"

#include <algorithm>

namespace lorascope::tokenizer {

std::vector<int64_t> TokenizerBase::encode(const std::string& text, bool add_special_tokens) const {
    std::vector<int64_t> ids;
    for (const TextSegment& segment : added_.split(text)) {
        if (segment.token_id >= 0) ids.push_back(segment.token_id);
        else encode_text(segment.text, ids);
    }
    if (add_special_tokens) post_.apply(ids);
    return ids;
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
    for (const AddedToken& token : config.additional_special_tokens) add(token);

    auto id_of = [&](const char* key) -> std::optional<int64_t> {
        auto it = config.special_tokens.find(key);
        if (it == config.special_tokens.end()) return std::nullopt;
        return token_to_id(it->second.content);
    };
    special_ids_.bos = id_of("bos_token");
    special_ids_.eos = id_of("eos_token");
    special_ids_.pad = id_of("pad_token");
    special_ids_.unk = id_of("unk_token");
    if (config.decoder_start_token_id) special_ids_.decoder_start = config.decoder_start_token_id;
    else if (config.family == TokenizerFamily::T5) special_ids_.decoder_start = special_ids_.pad;
    else if (config.family == TokenizerFamily::Bart) special_ids_.decoder_start = special_ids_.eos;
    if (config.clean_up_tokenization_spaces) clean_up_ = *config.clean_up_tokenization_spaces;
}

}  // namespace lorascope::tokenizer
