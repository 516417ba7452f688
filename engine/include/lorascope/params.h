// Per-request generation parameters: what a caller may ask for (every field optional), and the
// resolved set the engine runs with (request, then generation_config.json, then Hugging Face's
// defaults, with transformers 4.46's rules for deriving lengths).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/config.h"
#include "lorascope/json_input.h"

namespace lorascope {

// Hugging Face's `early_stopping`: True, False or "never" (beam search only).
enum class EarlyStopping { False, True, Never };
const char* to_string(EarlyStopping value);

// What a request asks for. An absent field (or JSON null) means "whatever the model's
// generation_config.json says, else Hugging Face's default".
struct GenerationParams {
    std::optional<int64_t> max_new_tokens;
    std::optional<int64_t> min_new_tokens;
    std::optional<bool> do_sample;
    std::optional<double> temperature;
    std::optional<int64_t> top_k;
    std::optional<double> top_p;
    std::optional<double> typical_p;
    std::optional<double> min_p;
    std::optional<double> repetition_penalty;
    std::optional<int64_t> no_repeat_ngram_size;
    std::optional<int64_t> num_beams;
    // Sequences returned per request (Hugging Face's num_return_sequences): the best ones of a beam
    // search (at most num_beams), or that many sequences sampled independently.
    std::optional<int64_t> num_return_sequences;
    std::optional<double> length_penalty;
    std::optional<EarlyStopping> early_stopping;
    std::optional<std::vector<std::string>> stop;   // matched on decoded text, excluded from the output
    std::optional<uint64_t> seed;
    std::optional<bool> ignore_eos;
    std::optional<bool> logprobs;
    // What the model weighed (issue 32). top_alternatives: the k (at most kMaxTopAlternatives)
    // most likely tokens at each generated position, from the same processed scores the token was
    // chosen from (LoRAX's return_k_alternatives). prompt_logprobs: each prompt token's
    // log-probability under the model (decoder-only), or each token of Request::target's
    // (encoder-decoder); LoRAX's decoder_input_details.
    std::optional<int64_t> top_alternatives;
    std::optional<bool> prompt_logprobs;
    // LoRAX's best_of: this many sampled candidates (at most kMaxBestOf), the one with the highest
    // mean log-probability per generated token returned first.
    std::optional<int64_t> best_of;
    // Keep only the last `truncate` prompt tokens (LoRAX's truncate; see LiveRequest::prepare).
    std::optional<int64_t> truncate;
    // The request's languages, for models whose tokenizer has language codes (mBART-50, NLLB): a
    // text prompt is encoded with src_lang's code where Hugging Face's tokenizer puts it for that
    // src_lang (absent: tokenizer_config.json's), and tgt_lang's code is forced as the first
    // generated token, as generate(forced_bos_token_id=<its id>) does (absent: generation_config's
    // forced_bos_token_id). A code the tokenizer lacks is that request's error.
    std::optional<std::string> src_lang;
    std::optional<std::string> tgt_lang;
};

inline constexpr int64_t kMaxTopAlternatives = 20;
inline constexpr int64_t kMaxBestOf = 16;

// Bounds every door applies to one request's parameters (the CLI's JSON Lines, `serve`'s routes,
// the window), so that whatever a client sends the engine's arithmetic stays finite and its work
// per token bounded. Ranges that do not depend on a limit here are fixed (see check_generation_params).
struct ParamLimits {
    JsonLimits json{64, 64 * 1024};   // the params object's text: nesting depth and bytes
    // Stop strings are matched against the tail of the decoded text at every token, in time
    // count x longest^2 (sampling/stopping.cpp's hold-back scan): 16 of 128 bytes cost ~260k byte
    // comparisons per token at worst. LoRAX allows 4 by default.
    int64_t max_stop_sequences = 16;
    int64_t max_stop_bytes = 128;     // per stop string
    // src_lang / tgt_lang: NLLB's longest code is 8 bytes; the bound only keeps error text short.
    int64_t max_language_bytes = 32;
};

// Parses a JSON object such as the CLI's "params", bounded by `limits` while parsing (depth and
// size, lorascope/json_input.h) and checked by check_generation_params. Unknown fields, values of
// the wrong type and out-of-range values are ErrorKind::InvalidArgument naming the field; `source`
// (e.g. "request 7") becomes the error's path.
GenerationParams parse_generation_params(const std::string& json_object_text,
                                         const std::string& source = "params", const ParamLimits& limits = {});

// The value rules of parse_generation_params for parameters built another way (a dialect of
// another server mapped onto these fields): every field in the range where the sampler's
// arithmetic stays finite, stop strings bounded in count and bytes. Throws
// Error(InvalidArgument, source, ...) naming the field and its allowed range.
//   temperature        0 (greedy only) or [1e-4, 1e4]: float32 logits divided by it stay finite up
//                      to |logit| 3.4e34 (1e-39 made them +-inf and multinomial threw, failing the
//                      whole batch), and its float cast stays finite (-inf / inf is NaN)
//   repetition_penalty [1e-4, 1e4]: the same for a logit multiplied or divided by it
//   length_penalty     [-10, 10]: a beam's length ** length_penalty stays within double's range
//   top_p, typical_p   (0, 1];  min_p [0, 1];  top_k, no_repeat_ngram_size, min_new_tokens >= 0
//   max_new_tokens, num_beams, num_return_sequences >= 1 (their upper bounds depend on the engine:
//                      check_request_budget)
void check_generation_params(const GenerationParams& params, const std::string& source = "params",
                             const ParamLimits& limits = {});

// Everything the sampler, the stopping criteria and beam search need, fully specified.
struct ResolvedGenerationParams {
    // Lengths stay in Hugging Face's form because HF derives the new-token limits from the length
    // of input_ids at generate() time (the prompt for decoder-only models, the decoder start
    // token for encoder-decoder ones): use the *_for() helpers below.
    std::optional<int64_t> max_new_tokens;   // from the request or generation_config.json
    int64_t max_length = 20;                 // total length, used when max_new_tokens is absent
    std::optional<int64_t> min_new_tokens;
    int64_t min_length = 0;                  // total length, used when min_new_tokens is absent

    bool do_sample = false;
    double temperature = 1.0;
    int64_t top_k = 50;
    double top_p = 1.0;
    double typical_p = 1.0;
    std::optional<double> min_p;
    double repetition_penalty = 1.0;
    int64_t no_repeat_ngram_size = 0;
    int64_t num_beams = 1;
    int64_t num_return_sequences = 1;
    double length_penalty = 1.0;
    EarlyStopping early_stopping = EarlyStopping::False;
    std::vector<std::string> stop;
    std::optional<uint64_t> seed;            // none: the engine picks one and may report it
    bool ignore_eos = false;
    bool logprobs = false;
    int64_t top_alternatives = 0;
    bool prompt_logprobs = false;
    int64_t best_of = 1;
    std::optional<int64_t> truncate;

    // From generation_config.json (not per request).
    std::vector<int64_t> eos_token_ids;
    std::optional<int64_t> forced_bos_token_id;
    std::optional<int64_t> forced_eos_token_id;
    std::vector<std::vector<int64_t>> bad_words_ids;   // without the [eos] ones, as HF drops them
    bool renormalize_logits = false;

    // New tokens allowed for a row whose input_ids start with `input_ids_length` tokens.
    // Throws InvalidArgument, as transformers does, when max_length leaves no room.
    int64_t max_new_tokens_for(int64_t input_ids_length) const;
    // Tokens that must be generated before eos may be chosen (min_length counts the prompt).
    int64_t min_new_tokens_for(int64_t input_ids_length) const;

    bool is_beam_search() const { return num_beams > 1; }
    // best_of ranks its candidates by their logprobs, computed whether or not the request shows them.
    bool needs_logprobs() const { return logprobs || best_of > 1; }
};

// Fills what `params` leaves open from `config` and validates the result. Throws
// Error(InvalidArgument, source, ...) with a message naming the parameter and the allowed range.
ResolvedGenerationParams resolve(const GenerationParams& params, const GenerationConfig& config,
                                 const std::string& source = "params");

// What one request may occupy in the engine: its batch rows times its positions (prompt and new
// tokens), the cost admission charges (batching/admission.h), within the engine's limits and the
// model's learned positions. Every door checks a request against it before the engine takes it
// (the engine itself does, at submit), so that a request that could never run is refused at once
// and no size overflows: 9223372036854775807 new tokens once made the KV block count negative and
// stopped admission for good (issue 26).
struct RequestBudget {
    int64_t max_batch_tokens = 16384;       // EngineOptions::max_batch_tokens
    int64_t max_batch_size = 32;            // EngineOptions::max_batch_size (rows: beams, samples)
    std::optional<int64_t> context_tokens;  // ModelConfig::context_tokens(); none: no learned positions
    bool encoder_decoder = true;            // context bounds the prompt and the decoder separately
};

// Throws Error(InvalidArgument, source, ...) saying which limit `rows` rows of `prompt_tokens` +
// `max_new_tokens` positions exceed, in checked arithmetic (no sum or product may overflow).
void check_request_budget(int64_t rows, int64_t prompt_tokens, int64_t max_new_tokens, const RequestBudget& budget,
                          const std::string& source = "params");

}  // namespace lorascope
