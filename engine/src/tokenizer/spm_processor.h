// SentencePiece through the dlopen'ed lorascope_spm module. Module search order: $LORASCOPE_SPM_SHIM,
// the build directory, <executable dir>/../lib/lorascope, then the install libdir.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lorascope::tokenizer {

struct SpmModule;  // the loaded module's function table

class SpmProcessor {
public:
    // Throws Error(NotFound) when the module cannot be found or loaded, Error(Format) naming
    // model_path when SentencePiece rejects the file.
    explicit SpmProcessor(const std::string& model_path);
    ~SpmProcessor();
    SpmProcessor(const SpmProcessor&) = delete;
    SpmProcessor& operator=(const SpmProcessor&) = delete;

    std::vector<int> encode(const std::string& text) const;
    int piece_size() const { return static_cast<int>(pieces_.size()); }
    const std::string& piece(int id) const { return pieces_[static_cast<size_t>(id)]; }
    bool is_control(int id) const { return types_[static_cast<size_t>(id)] == 1; }
    int unk_id() const { return unk_id_; }
    const std::string& module_path() const;

private:
    const SpmModule& module_;
    void* handle_ = nullptr;  // lorascope_spm*
    std::string path_;
    std::vector<std::string> pieces_;
    std::vector<int> types_;
    int unk_id_ = -1;
};

}  // namespace lorascope::tokenizer
