// What Hugging Face transformers reads next to the tokenizer files: tokenizer_config.json,
// special_tokens_map.json (which wins for special tokens, as from_pretrained does) and
// config.json's model_type, plus the per-class defaults of the tokenizer classes we mirror.
#pragma once

#include "tokenizer/added_vocabulary.h"

#include <nlohmann/json.hpp>

#include "lorascope/error.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lorascope::tokenizer {

// Reads a JSON file; throws Error(NotFound / Format) naming the file.
nlohmann::json read_json_file(const std::string& path);

// Runs read(), which interprets the JSON of the file at `path`: a value of an unexpected type
// (nlohmann's type_error, out_of_range for a missing key) becomes Error(Format) naming the file,
// as every other problem with a user's file is. The readers check the fields that decide what a
// tokenizer does; this catches the rest (a string where a flag belongs, an object for a merge).
template <class Read>
auto interpreting(const std::string& path, Read&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::Format, path, std::string("unexpected structure: ") + e.what());
    }
}
bool file_exists(const std::string& path);

// The Hugging Face tokenizer classes whose behaviour beyond tokenizer.json we mirror (defaults,
// post-processors, language codes, conversion of model files).
enum class TokenizerFamily { Unknown, T5, Bart, Gpt2, Bloom, Llama, Qwen2, MBart50, Nllb, Pegasus, Marian };
const char* to_string(TokenizerFamily family);

struct HfTokenizerConfig {
    TokenizerFamily family = TokenizerFamily::Unknown;
    std::string tokenizer_class;          // tokenizer_config.json
    std::string model_type;               // config.json
    std::optional<bool> clean_up_tokenization_spaces;
    std::optional<bool> add_prefix_space;
    // Written as null: the slow class then gets None (falsy) instead of its own default (true), which
    // matters where transformers converts a model file through the slow class.
    bool add_prefix_space_null = false;
    std::optional<int> extra_ids;
    std::optional<bool> legacy;            // Llama/T5: the pre-2023 pipeline (see LlamaConverter)
    std::optional<bool> add_bos_token, add_eos_token;  // Llama
    std::optional<std::string> src_lang, tgt_lang;     // mBART-50, NLLB
    bool legacy_behaviour = false;         // NLLB: X </s> [lang] instead of [lang] X </s>
    bool separate_vocabs = false;          // Marian: target_vocab.json decodes
    std::optional<int> offset;             // Pegasus: ids below it are special (103)
    std::optional<std::string> mask_token_sent;  // Pegasus: <mask_1>; explicitly null stays null
    bool mask_token_sent_null = false;
    // bos_token, eos_token, unk_token, pad_token, mask_token, sep_token, cls_token.
    std::map<std::string, AddedToken> special_tokens;
    // Special tokens the files set to null: the class default must not fill them in.
    std::set<std::string> null_special_tokens;
    std::vector<AddedToken> additional_special_tokens;
    std::vector<AddedToken> added_tokens_decoder;  // with ids
    std::optional<int64_t> decoder_start_token_id; // config.json
    // tokenizer_config.json's chat_template: a single template (named "") or, from the list form
    // [{"name", "template"}, ...], named ones in file order (a repeated name keeps the last, as
    // transformers' dict does). A malformed field does not stop the tokenizer from loading: it is
    // described in chat_template_error for whoever asks for a template.
    std::vector<std::pair<std::string, std::string>> chat_templates;
    bool chat_templates_named = false;
    std::string chat_template_error;
};

HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir);

// Fills in the defaults of the family's Hugging Face tokenizer class for absent special tokens
// (e.g. BartTokenizer's <mask> with lstrip).
void apply_family_defaults(HfTokenizerConfig& config);

// Family from tokenizer_class, then model_type; Unknown when neither says.
TokenizerFamily family_from_names(const std::string& tokenizer_class, const std::string& model_type);

}  // namespace lorascope::tokenizer
