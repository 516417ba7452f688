// What transformers' SpmConverter subclasses (convert_slow_tokenizer.py) build from a SentencePiece
// model file when a checkpoint ships no tokenizer.json: T5Converter (T5, mT5), PegasusConverter,
// MBart50Converter, NllbConverter and LlamaConverter. Each lays out the vocabulary its own way
// (extra ids; Pegasus's offset of 103; the fairseq offset with <s> <pad> </s> <unk> first and, for
// mBART-50, the language codes and <mask> last) and picks its pipeline and decoder.
#pragma once

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/hf_tokenizer_config.h"
#include "tokenizer/metaspace_pipeline.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/spm_model_file.h"
#include "tokenizer/spm_tokenizer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

struct SpmConversion {
    std::vector<std::pair<std::string, double>> vocab;  // in id order
    int64_t unk_id = 0;
    std::unique_ptr<BpeModel> bpe;                       // for BPE model files; null for Unigram
    MetaspacePipeline pipeline;
    SpmDecoder decoder;
    PostProcessor post;
    std::vector<AddedToken> added;                       // control and user-defined pieces, extra ids
    std::string converter;                               // e.g. "LlamaConverter", for describe()
};

// Throws Error(Unsupported) naming path for a family without a converter here.
SpmConversion convert_spm_model(const SpmModelFile& file, const HfTokenizerConfig& config, const std::string& path);

// transformers' generate_merges as SentencePieceExtractor runs it for a BPE model: every split of
// every vocabulary entry into two pieces of the model file, ordered by the entry's score (then the
// longer left piece, then the longer right one; ties keep vocabulary order).
std::vector<std::pair<std::string, std::string>> generate_spm_merges(
    const SpmModelFile& file, const std::vector<std::pair<std::string, double>>& vocab_scores);

}  // namespace lorascope::tokenizer
