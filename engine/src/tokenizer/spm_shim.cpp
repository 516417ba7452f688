// The only translation unit that links libsentencepiece: a C ABI around SentencePieceProcessor,
// built as the MODULE lorascope_spm and loaded with dlopen (see spm_shim_api.h for why).
#include "tokenizer/spm_shim_api.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#define LORASCOPE_SPM_EXPORT extern "C" __attribute__((visibility("default")))

struct lorascope_spm {
    sentencepiece::SentencePieceProcessor processor;
    std::vector<std::string> pieces;  // stable storage for id_to_piece
    std::string serialized;
};

namespace {
void write_error(char* err, size_t err_size, const std::string& message) {
    if (!err || err_size == 0) return;
    const size_t n = std::min(message.size(), err_size - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
}
bool valid(const lorascope_spm* model, int id) { return id >= 0 && static_cast<size_t>(id) < model->pieces.size(); }
}  // namespace

LORASCOPE_SPM_EXPORT int lorascope_spm_abi_version(void) { return LORASCOPE_SPM_ABI_VERSION; }

LORASCOPE_SPM_EXPORT lorascope_spm* lorascope_spm_load(const char* model_path, char* err, size_t err_size) {
    lorascope_spm* model = nullptr;
    try {
        model = new lorascope_spm;
        const auto status = model->processor.Load(model_path);
        if (!status.ok()) {
            write_error(err, err_size, status.ToString());
            delete model;
            return nullptr;
        }
        const int n = model->processor.GetPieceSize();
        model->pieces.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) model->pieces.push_back(model->processor.IdToPiece(i));
        model->serialized = model->processor.serialized_model_proto();
        return model;
    } catch (const std::exception& e) {
        write_error(err, err_size, e.what());
        delete model;
        return nullptr;
    }
}

LORASCOPE_SPM_EXPORT void lorascope_spm_free(lorascope_spm* model) { delete model; }

LORASCOPE_SPM_EXPORT int lorascope_spm_piece_size(const lorascope_spm* model) { return static_cast<int>(model->pieces.size()); }

LORASCOPE_SPM_EXPORT const char* lorascope_spm_id_to_piece(const lorascope_spm* model, int id) {
    return valid(model, id) ? model->pieces[static_cast<size_t>(id)].c_str() : "";
}

LORASCOPE_SPM_EXPORT float lorascope_spm_score(const lorascope_spm* model, int id) {
    return valid(model, id) ? model->processor.GetScore(id) : 0.0f;
}

LORASCOPE_SPM_EXPORT int lorascope_spm_unk_id(const lorascope_spm* model) { return model->processor.unk_id(); }

LORASCOPE_SPM_EXPORT const char* lorascope_spm_serialized_model(const lorascope_spm* model, size_t* size) {
    *size = model->serialized.size();
    return model->serialized.data();
}
