#include "tokenizer/spm_model_file.h"

#include "lorascope/error.h"
#include "tokenizer/spm_shim_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#ifndef LORASCOPE_SPM_SHIM_NAME
#define LORASCOPE_SPM_SHIM_NAME "liblorascope_spm.so"
#endif

namespace lorascope::tokenizer {

namespace {

struct SpmModule {
    std::string path;
    lorascope_spm_load_fn load = nullptr;
    lorascope_spm_free_fn free = nullptr;
    lorascope_spm_piece_size_fn piece_size = nullptr;
    lorascope_spm_id_to_piece_fn id_to_piece = nullptr;
    lorascope_spm_score_fn score = nullptr;
    lorascope_spm_unk_id_fn unk_id = nullptr;
    lorascope_spm_serialized_model_fn serialized_model = nullptr;
};

std::string executable_dir() {
    char buffer[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
    if (n <= 0) return {};
    std::string path(buffer, static_cast<size_t>(n));
    return path.substr(0, path.find_last_of('/'));
}

std::vector<std::string> candidate_paths() {
    std::vector<std::string> out;
    if (const char* env = std::getenv("LORASCOPE_SPM_SHIM"); env && *env) out.emplace_back(env);
#ifdef LORASCOPE_SPM_SHIM_BUILD_DIR
    out.push_back(std::string(LORASCOPE_SPM_SHIM_BUILD_DIR) + "/" + LORASCOPE_SPM_SHIM_NAME);
#endif
    const std::string exe = executable_dir();
    if (!exe.empty()) out.push_back(exe + "/../lib/lorascope/" + LORASCOPE_SPM_SHIM_NAME);
#ifdef LORASCOPE_LIBDIR
    out.push_back(std::string(LORASCOPE_LIBDIR) + "/" + LORASCOPE_SPM_SHIM_NAME);
#endif
    return out;
}

#if defined(__SANITIZE_ADDRESS__)
#define LORASCOPE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LORASCOPE_SANITIZED 1
#endif
#endif

int dlopen_flags() {
    // RTLD_DEEPBIND keeps the module's protobuf symbols from binding to libtorch's. The sanitizer
    // runtimes refuse RTLD_DEEPBIND, and sanitizer builds of the tokenizer tests never load libtorch.
#ifdef LORASCOPE_SANITIZED
    return RTLD_NOW | RTLD_LOCAL;
#else
    return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
}

template <typename Fn>
Fn symbol(void* handle, const char* name, const std::string& path) {
    void* s = dlsym(handle, name);
    if (!s) throw Error(ErrorKind::NotFound, path, std::string("SentencePiece module lacks symbol ") + name);
    return reinterpret_cast<Fn>(s);
}

const SpmModule& load_module() {
    // Loaded once per process and never unloaded: nothing else may hold the protobuf it carries.
    static std::mutex mutex;
    static std::unique_ptr<SpmModule> module;
    std::lock_guard<std::mutex> lock(mutex);
    if (module) return *module;
    std::string tried;
    for (const std::string& path : candidate_paths()) {
        if (access(path.c_str(), R_OK) != 0) {
            tried += "\n  " + path + " (absent)";
            continue;
        }
        void* handle = dlopen(path.c_str(), dlopen_flags());
        if (!handle) {
            const char* why = dlerror();
            tried += "\n  " + path + " (" + (why ? why : "dlopen failed") + ")";
            continue;
        }
        auto m = std::make_unique<SpmModule>();
        m->path = path;
        auto abi = symbol<lorascope_spm_abi_version_fn>(handle, "lorascope_spm_abi_version", path);
        if (abi() != LORASCOPE_SPM_ABI_VERSION) {
            tried += "\n  " + path + " (ABI version " + std::to_string(abi()) + ", expected " +
                     std::to_string(LORASCOPE_SPM_ABI_VERSION) + ")";
            continue;
        }
        m->load = symbol<lorascope_spm_load_fn>(handle, "lorascope_spm_load", path);
        m->free = symbol<lorascope_spm_free_fn>(handle, "lorascope_spm_free", path);
        m->piece_size = symbol<lorascope_spm_piece_size_fn>(handle, "lorascope_spm_piece_size", path);
        m->id_to_piece = symbol<lorascope_spm_id_to_piece_fn>(handle, "lorascope_spm_id_to_piece", path);
        m->score = symbol<lorascope_spm_score_fn>(handle, "lorascope_spm_score", path);
        m->unk_id = symbol<lorascope_spm_unk_id_fn>(handle, "lorascope_spm_unk_id", path);
        m->serialized_model = symbol<lorascope_spm_serialized_model_fn>(handle, "lorascope_spm_serialized_model", path);
        module = std::move(m);
        return *module;
    }
    throw Error(ErrorKind::NotFound, LORASCOPE_SPM_SHIM_NAME,
                "the SentencePiece module is needed for spiece.model but could not be loaded; set LORASCOPE_SPM_SHIM "
                "to its path. Tried:" + tried);
}

// Minimal protobuf wire-format reader for the ModelProto fields SentencePiece's API hides.
class ProtoReader {
public:
    ProtoReader(std::string_view data, const std::string& path) : data_(data), path_(path) {}
    bool done() const { return pos_ >= data_.size(); }
    uint64_t varint() {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= data_.size()) fail();
            const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
            value |= static_cast<uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return value;
        }
        fail();
    }
    // Reads a field key; the payload is then read with bytes()/varint() or dropped with skip().
    void key(int* field, int* wire) {
        const uint64_t k = varint();
        *field = static_cast<int>(k >> 3);
        *wire = static_cast<int>(k & 7);
    }
    std::string_view bytes() {
        const uint64_t n = varint();
        if (n > data_.size() - pos_) fail();
        std::string_view out = data_.substr(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return out;
    }
    void skip(int wire) {
        switch (wire) {
            case 0: varint(); break;
            case 1: advance(8); break;
            case 2: bytes(); break;
            case 5: advance(4); break;
            default: fail();
        }
    }

private:
    void advance(size_t n) {
        if (n > data_.size() - pos_) fail();
        pos_ += n;
    }
    [[noreturn]] void fail() const { throw Error(ErrorKind::Format, path_, "malformed SentencePiece model (protobuf)"); }
    std::string_view data_;
    const std::string& path_;
    size_t pos_ = 0;
};

void read_proto_fields(std::string_view serialized, const std::string& path, SpmModelFile& file) {
    ProtoReader model(serialized, path);
    file.types.clear();
    while (!model.done()) {
        int field, wire;
        model.key(&field, &wire);
        if (field == 1 && wire == 2) {  // repeated SentencePiece pieces
            ProtoReader piece(model.bytes(), path);
            int type = SpmModelFile::Normal;
            while (!piece.done()) {
                int f, w;
                piece.key(&f, &w);
                if (f == 3 && w == 0) type = static_cast<int>(piece.varint());
                else piece.skip(w);
            }
            file.types.push_back(type);
        } else if (field == 2 && wire == 2) {  // TrainerSpec
            ProtoReader trainer(model.bytes(), path);
            while (!trainer.done()) {
                int f, w;
                trainer.key(&f, &w);
                if (f == 3 && w == 0) file.model_type = static_cast<int>(trainer.varint());
                else if (f == 35 && w == 0) file.byte_fallback = trainer.varint() != 0;
                else trainer.skip(w);
            }
        } else if (field == 3 && wire == 2) {  // NormalizerSpec
            ProtoReader normalizer(model.bytes(), path);
            while (!normalizer.done()) {
                int f, w;
                normalizer.key(&f, &w);
                if (f == 2 && w == 2) file.precompiled_charsmap = std::string(normalizer.bytes());
                else normalizer.skip(w);
            }
        } else {
            model.skip(wire);
        }
    }
}

}  // namespace

SpmModelFile SpmModelFile::load(const std::string& path) {
    const SpmModule& module = load_module();
    char err[512] = {0};
    lorascope_spm* handle = module.load(path.c_str(), err, sizeof(err));
    if (!handle) throw Error(ErrorKind::Format, path, std::string("SentencePiece cannot load it: ") + err);
    std::unique_ptr<lorascope_spm, lorascope_spm_free_fn> owner(handle, module.free);

    SpmModelFile file;
    file.module_path = module.path;
    const int n = module.piece_size(handle);
    file.pieces.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        file.pieces.emplace_back(module.id_to_piece(handle, i), static_cast<double>(module.score(handle, i)));
    file.unk_id = module.unk_id(handle);
    size_t size = 0;
    const char* serialized = module.serialized_model(handle, &size);
    read_proto_fields(std::string_view(serialized, size), path, file);
    if (file.types.size() != file.pieces.size())
        throw Error(ErrorKind::Format, path, "SentencePiece model pieces disagree with its serialization");
    return file;
}

}  // namespace lorascope::tokenizer
