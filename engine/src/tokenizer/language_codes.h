// The language codes of the multilingual seq2seq tokenizers, in the order transformers lists them
// (MBart50Tokenizer's and NllbTokenizer's FAIRSEQ_LANGUAGE_CODES): mBART-50 always uses its list;
// NLLB uses tokenizer_config.json's additional_special_tokens and this list where those are absent.
// The order decides the ids of codes new to a vocabulary.
#pragma once

#include <string>
#include <vector>

namespace lorascope::tokenizer {

const std::vector<std::string>& mbart50_language_codes();
const std::vector<std::string>& nllb_language_codes();

// The first few of `codes` for an error message: "ar_AR, cs_CZ, de_DE, en_XX, es_XX, ...".
std::string some_language_codes(const std::vector<std::string>& codes);

}  // namespace lorascope::tokenizer
