// Tokenizers matching Hugging Face's: SentencePiece (spiece.model) and byte-level BPE
// (vocab.json + merges.txt, or tokenizer.json), with each model's own post-processing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lorascope {

enum class TokenizerKind { SentencePiece, ByteLevelBpe };
const char* to_string(TokenizerKind kind);

struct SpecialIds {
    std::optional<int64_t> bos, eos, pad, unk, decoder_start;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Text to ids. With add_special_tokens the model's post-processor applies
    // (T5 appends </s>; BART wraps in <s> ... </s>; BLOOM adds nothing).
    // Added/special tokens written inside the text (<extra_id_0>, <mask>, </s>) map to their ids.
    virtual std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const = 0;

    // Ids to text as Hugging Face's decode(ids, skip_special_tokens=...) with
    // clean_up_tokenization_spaces as the tokenizer's configuration says.
    virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const = 0;

    virtual int64_t vocab_size() const = 0;           // including added tokens
    virtual std::optional<int64_t> token_to_id(const std::string& token) const = 0;
    virtual std::string id_to_token(int64_t id) const = 0;
    virtual bool is_special(int64_t id) const = 0;
    virtual const SpecialIds& special_ids() const = 0;
    virtual TokenizerKind kind() const = 0;
    virtual std::string describe() const = 0;         // e.g. "byte-level BPE from tokenizer.json"
};

// Picks the backend from the files in dir (tokenizer.json's declared pipeline first).
// Throws lorascope::Error naming the file on missing or malformed tokenizer files.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// Feeds ids one at a time and returns text deltas whose concatenation equals
// tokenizer.decode(all_ids, skip_special_tokens). Never emits half a UTF-8 character:
// incomplete sequences are held back until they complete (prefix/read offsets as in TGI).
class StreamingDetokenizer {
public:
    StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = true,
                         std::vector<int64_t> context_ids = {});
    std::string push(int64_t id);
    std::string finish();   // flushes whatever is held back
    const std::vector<int64_t>& ids() const { return ids_; }

private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::vector<int64_t> ids_;
    size_t prefix_offset_ = 0;
    size_t read_offset_ = 0;
    std::string emitted_;
};

}  // namespace lorascope
