// Adapters a client names by path (LoRAX's adapter_source "local"), confined to one directory the
// operator allows (`serve --adapter-dir`, `generate --adapter-dir`): a path that leaves it, through
// "..", an absolute path elsewhere or a symbolic link, is refused; no other path is ever opened.
#pragma once

#include <string>

#include "lorascope/engine.h"

namespace lorascope {

class AdapterDirectory {
public:
    // `root` must be an existing directory (Error NotFound / InvalidArgument naming it otherwise);
    // it is resolved once (symbolic links followed), and every adapter must lie under what it
    // resolves to.
    explicit AdapterDirectory(const std::string& root);

    const std::string& root() const { return root_; }   // canonical

    // The canonical directory of the adapter `requested` names, relative to the root or absolute.
    // Refused with Error(Unsafe, requested, ...) when it is empty, holds a ".." component or a NUL,
    // or resolves outside the root (an absolute path elsewhere, a symbolic link leaving it, for the
    // directory or for adapter_config.json / adapter_model.safetensors inside it); Error(NotFound)
    // when no such directory exists under the root. Messages never show where a link points.
    // What is checked is the file system at the call: whoever may write under the root can still
    // swap a directory for a link afterwards, so the root must be writable only by the operator.
    std::string resolve(const std::string& requested) const;

    // The name load_local_adapter registers an adapter under: "local:" + its path below the root.
    std::string adapter_name(const std::string& resolved) const;

private:
    std::string root_;
};

// Registers the adapter `requested` names with `engine` (AdapterDirectory::resolve, then
// Engine::load_adapter) unless it is registered already, and returns the name to put in
// Request::adapter. Throws what resolve and load_adapter throw.
std::string load_local_adapter(Engine& engine, const AdapterDirectory& directory, const std::string& requested);

}  // namespace lorascope
