// Tokenizers matching Hugging Face's: SentencePiece models (T5/mT5, Pegasus, mBART-50, NLLB: Unigram
// or BPE; Llama/Mistral: BPE with byte fallback; Marian: a source and a target model with one
// vocabulary) and byte-level BPE (GPT-2, BART, BLOOM, Llama 3, Qwen2), from tokenizer.json or the
// model's own files, with each model's post-processing and language codes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lorascope {

enum class TokenizerKind {
    SentencePiece,      // SentencePiece Unigram, as transformers' fast tokenizers run it (T5, mT5, Pegasus, mBART-50)
    ByteLevelBpe,       // byte-level BPE (GPT-2, BART, BLOOM, Llama 3, Qwen2)
    SentencePieceBpe,   // BPE over SentencePiece pieces, with byte fallback where the model has it (Llama, Mistral, NLLB)
    SentencePiecePair,  // Marian: SentencePiece's own algorithm, source model encodes and target model decodes
};
const char* to_string(TokenizerKind kind);

struct SpecialIds {
    std::optional<int64_t> bos, eos, pad, unk, decoder_start;
};

struct EncodeOptions {
    // The model's post-processor (T5 appends </s>; BART wraps in <s> ... </s>; mBART-50 and NLLB
    // put the language code first and </s> last; Llama adds <s>).
    bool add_special_tokens = true;
    // mBART-50 / NLLB: the source language, one of language_codes(); empty: the tokenizer's own
    // (tokenizer_config.json's src_lang, else en_XX / eng_Latn). Refused by tokenizers without codes.
    std::string src_lang;
    // Text for the decoder side (labels): Marian encodes it with its target model; mBART-50 and
    // NLLB mark it with tgt_lang's code instead of the source language's.
    bool target = false;
    std::string tgt_lang;  // with target: empty means tokenizer_config.json's tgt_lang
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Text to ids. Added/special tokens written inside the text (<extra_id_0>, <mask>, </s>) map to
    // their ids. Throws lorascope::Error(InvalidArgument) for a language this tokenizer lacks.
    virtual std::vector<int64_t> encode(const std::string& text, const EncodeOptions& options) const = 0;
    std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const;

    // Ids to text as Hugging Face's decode(ids, skip_special_tokens=...) with
    // clean_up_tokenization_spaces as the tokenizer's configuration says. Ids outside the
    // vocabulary are dropped, as Hugging Face's fast tokenizers do (Marian's spell <unk>).
    std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;

    virtual int64_t vocab_size() const = 0;           // including added tokens
    virtual std::optional<int64_t> token_to_id(const std::string& token) const = 0;
    virtual std::string id_to_token(int64_t id) const = 0;  // "" outside the vocabulary
    virtual bool is_special(int64_t id) const = 0;
    virtual const SpecialIds& special_ids() const = 0;
    virtual TokenizerKind kind() const = 0;
    virtual std::string describe() const = 0;         // e.g. "byte-level BPE from tokenizer.json"

    // Language codes: mBART-50's en_XX..., NLLB's eng_Latn... (what EncodeOptions' src_lang and
    // tgt_lang take; a model is steered to its output language by forcing that code's id first),
    // Marian's >>fra<< target codes (written at the start of the source text). Empty otherwise.
    virtual const std::vector<std::string>& language_codes() const = 0;
    std::optional<int64_t> language_token_id(const std::string& code) const;
    // Whether EncodeOptions' src_lang / tgt_lang (a request's languages) apply: mBART-50 and NLLB,
    // not Marian, whose codes are text.
    bool takes_language_options() const;

    // One token's bytes as it reads after other text (SentencePiece keeps its leading space; a
    // byte-fallback token is its byte; `first` applies the decoder's rule for the first token);
    // nullopt outside the vocabulary. What stop strings are matched against.
    virtual std::optional<std::string> token_bytes(int64_t id, bool first) const = 0;

    // The decoding pipeline, shared by decode() and StreamingDetokenizer so that both agree:
    //   decode(ids) == clean_up(utf8_lossy(pushes of every id, then finish()))
    // A decoder may hold bytes back until later ids decide them (a byte-fallback run, which turns
    // into U+FFFD per byte if it is not UTF-8 as a whole; Marian's trailing spaces).
    class Decoder {
    public:
        virtual ~Decoder() = default;
        virtual void push(int64_t id, std::string& out) = 0;
        virtual void finish(std::string& out) = 0;
    };
    virtual std::unique_ptr<Decoder> make_decoder(bool skip_special_tokens) const = 0;
    virtual bool clean_up_tokenization_spaces() const = 0;
    // Hugging Face's clean_up_tokenization (" ." -> "." , " n't" -> "n't", ...).
    static std::string clean_up_tokenization(const std::string& text);
};

// Picks the backend from the files in dir (tokenizer.json's declared pipeline first, then
// tokenizer_config.json's tokenizer_class over the SentencePiece or vocabulary files present).
// Throws lorascope::Error naming the file on missing or malformed tokenizer files.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// Feeds ids one at a time and returns text deltas whose concatenation equals
// tokenizer.decode(all_ids, skip_special_tokens). Never emits half a UTF-8 character:
// incomplete byte sequences are held back until they complete (or finish() flushes them as
// U+FFFD, as decode() would), and so is a run of byte-fallback tokens (<0xE2><0x82><0xAC>) until a
// token that is not a byte ends it; with clean-up enabled, text that a later token could still
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
    std::unique_ptr<Tokenizer::Decoder> decoder_;
    std::vector<int64_t> ids_;
    bool suppress_ = false;       // true while feeding context ids
    std::string pending_bytes_;   // raw bytes not yet converted (an incomplete UTF-8 tail)
    std::string pending_text_;    // converted text that clean-up could still change
};

}  // namespace lorascope
