// The only translation unit that links libsentencepiece: a C ABI around SentencePieceProcessor,
// built as the MODULE lorascope_spm and loaded with dlopen (see spm_shim_api.h for why).
#include "tokenizer/spm_shim_api.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

struct lorascope_spm {
    sentencepiece::SentencePieceProcessor processor;
    std::vector<std::string> pieces;  // stable storage for id_to_piece
};

namespace {
void write_error(char* err, size_t err_size, const std::string& message) {
    if (!err || err_size == 0) return;
    const size_t n = std::min(message.size(), err_size - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int lorascope_spm_abi_version(void) { return LORASCOPE_SPM_ABI_VERSION; }

__attribute__((visibility("default"))) lorascope_spm* lorascope_spm_load(const char* model_path, char* err, size_t err_size) {
    try {
        auto* model = new lorascope_spm;
        const auto status = model->processor.Load(model_path);
        if (!status.ok()) {
            write_error(err, err_size, status.ToString());
            delete model;
            return nullptr;
        }
        const int n = model->processor.GetPieceSize();
        model->pieces.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) model->pieces.push_back(model->processor.IdToPiece(i));
        return model;
    } catch (const std::exception& e) {
        write_error(err, err_size, e.what());
        return nullptr;
    }
}

__attribute__((visibility("default"))) void lorascope_spm_free(lorascope_spm* model) { delete model; }

__attribute__((visibility("default"))) int lorascope_spm_piece_size(const lorascope_spm* model) {
    return static_cast<int>(model->pieces.size());
}

__attribute__((visibility("default"))) long lorascope_spm_encode(const lorascope_spm* model, const char* text, size_t text_size,
                                                                int* out, size_t capacity) {
    try {
        std::vector<int> ids;
        const auto status = model->processor.Encode(std::string(text, text_size), &ids);
        if (!status.ok()) return -1;
        for (size_t i = 0; i < ids.size() && i < capacity; ++i) out[i] = ids[i];
        return static_cast<long>(ids.size());
    } catch (const std::exception&) {
        return -1;
    }
}

__attribute__((visibility("default"))) const char* lorascope_spm_id_to_piece(const lorascope_spm* model, int id) {
    if (id < 0 || static_cast<size_t>(id) >= model->pieces.size()) return "";
    return model->pieces[static_cast<size_t>(id)].c_str();
}

__attribute__((visibility("default"))) int lorascope_spm_piece_type(const lorascope_spm* model, int id) {
    if (id < 0 || static_cast<size_t>(id) >= model->pieces.size()) return 0;
    const auto& p = model->processor;
    if (p.IsControl(id)) return 1;
    if (p.IsUnknown(id)) return 2;
    if (p.IsUnused(id)) return 3;
    if (p.IsByte(id)) return 4;
    return 0;
}

__attribute__((visibility("default"))) int lorascope_spm_unk_id(const lorascope_spm* model) { return model->processor.unk_id(); }

}  // extern "C"
