#include "lorascope/local_adapters.h"

#include <filesystem>
#include <system_error>

#include "lorascope/error.h"

namespace lorascope {

namespace fs = std::filesystem;

namespace {

// Far longer than any adapter path; bounds what a client can make us split and resolve.
constexpr size_t kMaxRequestedBytes = 4096;

bool inside(const std::string& path, const std::string& root) {
    if (path == root) return true;
    const std::string prefix = root.back() == '/' ? root : root + "/";
    return path.compare(0, prefix.size(), prefix) == 0;
}

[[noreturn]] void refuse(const std::string& requested, const std::string& why) {
    throw Error(ErrorKind::Unsafe, requested, why);
}

}  // namespace

AdapterDirectory::AdapterDirectory(const std::string& root) {
    std::error_code ec;
    if (root.empty()) throw Error(ErrorKind::InvalidArgument, "the allowed adapter directory must not be empty");
    const fs::path canonical = fs::canonical(root, ec);
    if (ec) throw Error(ErrorKind::NotFound, root, "the allowed adapter directory does not exist: " + ec.message());
    if (!fs::is_directory(canonical, ec))
        throw Error(ErrorKind::InvalidArgument, root, "the allowed adapter directory is not a directory");
    root_ = canonical.string();
}

std::string AdapterDirectory::resolve(const std::string& requested) const {
    if (requested.empty()) refuse("(empty)", "an adapter path must not be empty");
    if (requested.size() > kMaxRequestedBytes) refuse(requested.substr(0, 64) + "...", "the adapter path is too long");
    if (requested.find('\0') != std::string::npos) refuse("(path)", "an adapter path must not contain NUL bytes");
    const fs::path path(requested);
    for (const fs::path& part : path)
        if (part == "..") refuse(requested, "an adapter path must not contain '..'");
    const fs::path full = path.is_absolute() ? path : fs::path(root_) / path;
    // Lexically first: an absolute path elsewhere is refused without touching the file system there.
    if (!inside(full.lexically_normal().string(), root_))
        refuse(requested, "the adapter path is outside the allowed adapter directory");
    std::error_code ec;
    const fs::path canonical = fs::canonical(full, ec);
    if (ec || !fs::is_directory(canonical, ec))
        throw Error(ErrorKind::NotFound, requested, "no adapter directory of that name in the allowed adapter directory");
    if (!inside(canonical.string(), root_))
        refuse(requested, "the adapter path leaves the allowed adapter directory through a symbolic link");
    for (const char* file : {"adapter_config.json", "adapter_model.safetensors"}) {
        const fs::path f = canonical / file;
        if (!fs::exists(fs::symlink_status(f, ec))) continue;   // the loader says what is missing
        const fs::path target = fs::canonical(f, ec);
        if (ec || !inside(target.string(), root_))
            refuse(requested, std::string(file) + " leaves the allowed adapter directory through a symbolic link");
    }
    return canonical.string();
}

std::string AdapterDirectory::adapter_name(const std::string& resolved) const {
    if (resolved == root_) return "local:.";
    return "local:" + fs::path(resolved).lexically_relative(root_).string();
}

std::string load_local_adapter(Engine& engine, const AdapterDirectory& directory, const std::string& requested) {
    const std::string dir = directory.resolve(requested);
    const std::string name = directory.adapter_name(dir);
    auto registered = [&] {
        for (const AdapterInfo& a : engine.adapters())
            if (a.name == name) return true;
        return false;
    };
    if (registered()) return name;
    try {
        engine.load_adapter(name, dir);
    } catch (const Error&) {
        if (!registered()) throw;   // else another request loaded it meanwhile
    }
    return name;
}

}  // namespace lorascope
