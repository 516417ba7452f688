// Torch-free safetensors reader: memory-mapped single files and sharded checkpoints
// (model.safetensors.index.json). Everything is validated when a file is opened, so later
// accesses can trust offsets and sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace lorascope::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };
const char* to_string(DType dtype);           // the safetensors spelling, e.g. "BF16"
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);

// A whole file mapped MAP_PRIVATE: pages stay shared with the page cache, and an accidental
// write through a zero-copy tensor only dirties a private copy, never the file.
class MappedFile {
public:
    static std::shared_ptr<MappedFile> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    MappedFile(std::string path, uint8_t* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}
    std::string path_;
    uint8_t* data_;
    size_t size_;
};

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;  // offsets relative to the data section, as in the header
    uint64_t end = 0;

    int64_t numel() const;
    uint64_t nbytes() const { return end - begin; }
};

std::string shape_to_string(const std::vector<int64_t>& shape);

class SafetensorsFile {
public:
    // Largest header accepted (the reference implementation's limit).
    static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

    // Maps and validates the file; every problem is a lorascope::Error naming the file (and tensor).
    static std::shared_ptr<SafetensorsFile> open(const std::string& path);

    const std::string& path() const { return mapping_->path(); }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
    const TensorInfo* find(const std::string& name) const;
    const TensorInfo& at(const std::string& name) const;  // NotFound naming file and tensor
    // Start of a tensor's bytes inside the mapping.
    uint8_t* data(const TensorInfo& info) const { return data_section_ + info.begin; }
    const std::shared_ptr<MappedFile>& mapping() const { return mapping_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    uint64_t file_bytes() const { return mapping_->size(); }

private:
    explicit SafetensorsFile(std::shared_ptr<MappedFile> mapping);
    void parse_and_validate();

    std::shared_ptr<MappedFile> mapping_;
    uint8_t* data_section_ = nullptr;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> by_name_;
    std::map<std::string, std::string> metadata_;
};

// One checkpoint: a single model.safetensors or every shard named by an index file.
class SafetensorsCheckpoint {
public:
    struct Entry {
        const SafetensorsFile* file;
        const TensorInfo* info;
    };

    // <dir>/model.safetensors, else <dir>/model.safetensors.index.json. NotFound when neither exists.
    static std::shared_ptr<SafetensorsCheckpoint> open_dir(const std::string& dir,
                                                           const std::string& stem = "model");
    static std::shared_ptr<SafetensorsCheckpoint> open_file(const std::string& path);
    static std::shared_ptr<SafetensorsCheckpoint> open_index(const std::string& index_path);

    const Entry* find(const std::string& name) const;
    bool contains(const std::string& name) const { return find(name) != nullptr; }
    const std::vector<std::string>& names() const { return names_; }  // as stored, sorted
    const std::vector<std::shared_ptr<SafetensorsFile>>& shards() const { return shards_; }
    uint64_t file_bytes() const;
    // model.safetensors, or the index file for a sharded checkpoint: what errors should name.
    const std::string& source_path() const { return source_path_; }
    bool sharded() const { return sharded_; }

private:
    void add_entry(const std::string& name, const SafetensorsFile* file, const TensorInfo* info);

    std::string source_path_;
    bool sharded_ = false;
    std::vector<std::shared_ptr<SafetensorsFile>> shards_;
    std::unordered_map<std::string, Entry> entries_;
    std::vector<std::string> names_;
};

// A model directory's weights: model.safetensors or its sharded index. A directory that holds
// only a pickled pytorch_model.bin is refused (ErrorKind::Unsafe: unpickling runs code from the
// file); with allow_pickle the refusal says that the opt-in is not implemented yet.
std::shared_ptr<SafetensorsCheckpoint> open_model_checkpoint(const std::string& dir, bool allow_pickle = false);

}  // namespace lorascope::io
