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
    // clean_up_tokenization_spaces as the tokenizer's configuration says. Ids outside the
    // vocabulary are dropped, as Hugging Face does.
    std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;

    virtual int64_t vocab_size() const = 0;           // including added tokens
    virtual std::optional<int64_t> token_to_id(const std::string& token) const = 0;
    virtual std::string id_to_token(int64_t id) const = 0;  // "" outside the vocabulary
    virtual bool is_special(int64_t id) const = 0;
    virtual const SpecialIds& special_ids() const = 0;
    virtual TokenizerKind kind() const = 0;
    virtual std::string describe() const = 0;         // e.g. "byte-level BPE from tokenizer.json"

    // The decoding pipeline, shared by decode() and StreamingDetokenizer so that both agree:
    //   decode(ids) == clean_up(utf8_lossy(concat(token_bytes(id, first) for every kept id)))
    // where `first` is true for the first kept id only (SentencePiece drops its leading space).
    // token_bytes returns nullopt for ids outside the vocabulary.
    virtual std::optional<std::string> token_bytes(int64_t id, bool first) const = 0;
    virtual bool clean_up_tokenization_spaces() const = 0;
    // Hugging Face's clean_up_tokenization (" ." -> "." , " n't" -> "n't", ...).
    static std::string clean_up_tokenization(const std::string& text);
};

// Picks the backend from the files in dir (tokenizer.json's declared pipeline first).
// Throws lorascope::Error naming the file on missing or malformed tokenizer files.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// Feeds ids one at a time and returns text deltas whose concatenation equals
// tokenizer.decode(all_ids, skip_special_tokens). Never emits half a UTF-8 character:
// incomplete byte sequences are held back until they complete (or finish() flushes them as
// U+FFFD, as decode() would); with clean-up enabled, text that a later token could still
// change (" n" before "'t") is held back too.
class StreamingDetokenizer {
public:
    // context_ids are ids already shown (e.g. the prompt of a decoder-only model): they decide
    // which id is the first one decoded but produce no output.
    StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = true,
                         std::vector<int64_t> context_ids = {});
    std::string push(int64_t id);
    std::string finish();   // flushes whatever is held back
    const std::vector<int64_t>& ids() const { return ids_; }

private:
    std::string take_stable_text(bool final);

    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::vector<int64_t> ids_;
    bool seen_first_ = false;     // whether a kept id was decoded already (context included)
    bool suppress_ = false;       // true while feeding context ids
    std::string pending_bytes_;   // raw bytes not yet converted (an incomplete UTF-8 tail)
    std::string pending_text_;    // converted text that clean-up could still change
};

}  // namespace lorascope
