// A downloaded SentencePiece model (ModelProto, read by our own protobuf reader): a model that
// loads must then encode and decode through every pipeline that reads such a file: T5's
// spiece.model, Pegasus's, Llama's tokenizer.model, NLLB's and mBART-50's sentencepiece.bpe.model
// (transformers' converters), and Marian's source.spm / target.spm (SentencePiece's own algorithm).
#include <filesystem>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "tokenizer/spm_model_file.h"
#include "tokenizer_checks.h"

using namespace lorascope;

namespace {

struct Layout {
    const char* dir;
    const char* file;
    const char* config;  // tokenizer_config.json, or nullptr
};

const Layout kLayouts[] = {
    {"t5", "spiece.model", nullptr},
    {"pegasus", "spiece.model", R"({"tokenizer_class": "PegasusTokenizer"})"},
    {"llama", "tokenizer.model", R"({"tokenizer_class": "LlamaTokenizer", "legacy": false, "add_prefix_space": true})"},
    {"nllb", "sentencepiece.bpe.model", R"({"tokenizer_class": "NllbTokenizer"})"},
    {"mbart50", "sentencepiece.bpe.model", R"({"tokenizer_class": "MBart50Tokenizer"})"},
};

void exercise(const std::string& dir) {
    LORASCOPE_FUZZ_PARSE({
        const auto tok = load_tokenizer(dir);
        fuzz::exercise_tokenizer(*tok, "Hello  world, it's 2024!\tcaf\xC3\xA9 \xEF\xBC\xA1 </s> <extra_id_0> >>fra<< \xE2\x82\xAC", true, true);
        std::vector<int64_t> ids;
        for (int64_t id = -2; id < 300 && id < tok->vocab_size() + 2; ++id) ids.push_back(id);
        fuzz::check_decode_and_stream(*tok, ids, false);
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string path = fuzz::write_file("spiece.model", bytes);
    tokenizer::SpmModelFile model;
    try {
        model = tokenizer::SpmModelFile::parse(bytes, path);
    } catch (const Error& e) {
        fuzz::check_refusal(e);
        return 0;
    }
    if (model.pieces.size() != model.types.size()) std::abort();
    for (const Layout& layout : kLayouts) {
        const std::string dir = fuzz::scratch_dir() + "/" + layout.dir;
        std::filesystem::create_directories(dir);
        fuzz::write_file(std::string(layout.dir) + "/" + layout.file, bytes);
        if (layout.config) fuzz::write_file(std::string(layout.dir) + "/tokenizer_config.json", layout.config);
        exercise(dir);
    }
    // Marian: the model on both sides, every piece in the joint vocabulary.
    nlohmann::json vocab = {{"</s>", 0}, {"<unk>", 1}};
    for (const auto& [piece, score] : model.pieces)
        if (!vocab.contains(piece)) vocab[piece] = vocab.size();
    vocab[">>fra<<"] = vocab.size();
    vocab["<pad>"] = vocab.size();
    std::filesystem::create_directories(fuzz::scratch_dir() + "/marian");
    for (const char* file : {"marian/source.spm", "marian/target.spm"}) fuzz::write_file(file, bytes);
    fuzz::write_file("marian/vocab.json", vocab.dump());
    exercise(fuzz::scratch_dir() + "/marian");
    return 0;
}
