#include "tokenizer/spm_processor.h"

#include "lorascope/error.h"
#include "tokenizer/spm_shim_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#ifndef LORASCOPE_SPM_SHIM_NAME
#define LORASCOPE_SPM_SHIM_NAME "liblorascope_spm.so"
#endif

namespace lorascope::tokenizer {

struct SpmModule {
    std::string path;
    lorascope_spm_load_fn load = nullptr;
    lorascope_spm_free_fn free = nullptr;
    lorascope_spm_piece_size_fn piece_size = nullptr;
    lorascope_spm_encode_fn encode = nullptr;
    lorascope_spm_id_to_piece_fn id_to_piece = nullptr;
    lorascope_spm_piece_type_fn piece_type = nullptr;
    lorascope_spm_unk_id_fn unk_id = nullptr;
};

namespace {

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

int dlopen_flags() {
    // RTLD_DEEPBIND keeps the module's protobuf symbols from binding to libtorch's. The sanitizer
    // runtimes refuse RTLD_DEEPBIND, and sanitizer builds of the tests never load libtorch.
#if defined(__SANITIZE_ADDRESS__)
    return RTLD_NOW | RTLD_LOCAL;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return RTLD_NOW | RTLD_LOCAL;
#else
    return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
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
    // Loaded once per process and never unloaded: tokenizers may outlive any owner we could pick.
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
            throw Error(ErrorKind::NotFound, path, "SentencePiece module has ABI version " + std::to_string(abi()) +
                                                       ", expected " + std::to_string(LORASCOPE_SPM_ABI_VERSION));
        }
        m->load = symbol<lorascope_spm_load_fn>(handle, "lorascope_spm_load", path);
        m->free = symbol<lorascope_spm_free_fn>(handle, "lorascope_spm_free", path);
        m->piece_size = symbol<lorascope_spm_piece_size_fn>(handle, "lorascope_spm_piece_size", path);
        m->encode = symbol<lorascope_spm_encode_fn>(handle, "lorascope_spm_encode", path);
        m->id_to_piece = symbol<lorascope_spm_id_to_piece_fn>(handle, "lorascope_spm_id_to_piece", path);
        m->piece_type = symbol<lorascope_spm_piece_type_fn>(handle, "lorascope_spm_piece_type", path);
        m->unk_id = symbol<lorascope_spm_unk_id_fn>(handle, "lorascope_spm_unk_id", path);
        module = std::move(m);
        return *module;
    }
    throw Error(ErrorKind::NotFound, LORASCOPE_SPM_SHIM_NAME,
                "the SentencePiece module is needed for spiece.model but was not found; set LORASCOPE_SPM_SHIM "
                "to its path. Tried:" + tried);
}

}  // namespace

SpmProcessor::SpmProcessor(const std::string& model_path) : module_(load_module()), path_(model_path) {
    char err[512] = {0};
    handle_ = module_.load(model_path.c_str(), err, sizeof(err));
    if (!handle_) throw Error(ErrorKind::Format, model_path, std::string("SentencePiece cannot load it: ") + err);
    auto* h = static_cast<lorascope_spm*>(handle_);
    const int n = module_.piece_size(h);
    pieces_.reserve(static_cast<size_t>(n));
    types_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        pieces_.emplace_back(module_.id_to_piece(h, i));
        types_.push_back(module_.piece_type(h, i));
    }
    unk_id_ = module_.unk_id(h);
}

SpmProcessor::~SpmProcessor() {
    if (handle_) module_.free(static_cast<lorascope_spm*>(handle_));
}

const std::string& SpmProcessor::module_path() const { return module_.path; }

std::vector<int> SpmProcessor::encode(const std::string& text) const {
    auto* h = static_cast<const lorascope_spm*>(handle_);
    std::vector<int> ids(text.size() + 8);
    long n = module_.encode(h, text.data(), text.size(), ids.data(), ids.size());
    if (n > static_cast<long>(ids.size())) {
        ids.resize(static_cast<size_t>(n));
        n = module_.encode(h, text.data(), text.size(), ids.data(), ids.size());
    }
    if (n < 0) throw Error(ErrorKind::Internal, path_, "SentencePiece failed to encode the text");
    ids.resize(static_cast<size_t>(n));
    return ids;
}

}  // namespace lorascope::tokenizer
