#include "util/paths.h"
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "lorascope/error.h"
#include "util/json_read.h"

namespace lorascope::io {
namespace {

using json::Json;

struct DTypeName {
    const char* name;
    DType dtype;
    size_t size;
};

constexpr DTypeName kDTypes[] = {
    {"F64", DType::F64, 8}, {"F32", DType::F32, 4}, {"F16", DType::F16, 2}, {"BF16", DType::BF16, 2},
    {"I64", DType::I64, 8}, {"I32", DType::I32, 4}, {"I16", DType::I16, 2}, {"I8", DType::I8, 1},
    {"U8", DType::U8, 1},   {"BOOL", DType::Bool, 1},
};

// Valid in the safetensors format but not something we can hand to the models.
// Checked like the others (their sizes), refused only once the file proved well-formed, so that a
// corrupt file is a Format error whatever dtypes it names, as the reference implementation decides.
constexpr std::pair<const char*, size_t> kKnownUnsupported[] = {
    {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

std::string dirname_of(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

uint64_t read_le_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

const char* to_string(DType dtype) {
    for (const auto& d : kDTypes)
        if (d.dtype == dtype) return d.name;
    return "?";
}

size_t dtype_size(DType dtype) {
    for (const auto& d : kDTypes)
        if (d.dtype == dtype) return d.size;
    return 0;
}

bool is_floating(DType dtype) {
    return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// ---------------------------------------------------------------------------------------------

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw Error(err == ENOENT ? ErrorKind::NotFound : ErrorKind::InvalidArgument, path,
                    std::string("cannot open: ") + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorKind::InvalidArgument, path, "not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    uint8_t* data = nullptr;
    if (size > 0) {
        // PROT_WRITE with MAP_PRIVATE: writes are copy-on-write and never reach the file.
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(ErrorKind::Internal, path, std::string("mmap failed: ") + std::strerror(err));
        }
        data = static_cast<uint8_t*>(p);
    }
    ::close(fd);
    return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(data_, size_);
}

// ---------------------------------------------------------------------------------------------

SafetensorsFile::SafetensorsFile(std::shared_ptr<MappedFile> mapping) : mapping_(std::move(mapping)) {}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    std::shared_ptr<SafetensorsFile> file(new SafetensorsFile(MappedFile::open(path)));
    file->parse_and_validate();
    return file;
}

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw Error(ErrorKind::Format, path, message);
}

// The header's JSON text after checking its length against the file; sets `data_size`.
std::string header_text(const MappedFile& mapping, uint64_t* data_size) {
    const std::string& path = mapping.path();
    const uint64_t file_size = mapping.size();
    if (file_size < 8)
        fail(path, "file is " + std::to_string(file_size) + " bytes, too short for a safetensors header (truncated?)");
    const uint64_t header_len = read_le_u64(mapping.data());
    if (header_len > SafetensorsFile::kMaxHeaderBytes)
        fail(path, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                       std::to_string(SafetensorsFile::kMaxHeaderBytes) + " bytes (not a safetensors file?)");
    if (header_len > file_size - 8)
        fail(path, "header length " + std::to_string(header_len) + " is longer than the rest of the file (" +
                       std::to_string(file_size - 8) + " bytes; truncated?)");
    *data_size = file_size - 8 - header_len;
    return std::string(reinterpret_cast<const char*>(mapping.data() + 8), header_len);
}

// A dtype name: known (its size from the table), valid but unsupported (`unsupported_size`), or a
// Format error.
bool read_dtype(const std::string& path, const std::string& where, const Json& entry, TensorInfo& info,
                std::string& dtype_name, size_t& unsupported_size) {
    auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) fail(path, where + "missing or non-string 'dtype'");
    dtype_name = dtype_it->get<std::string>();
    for (const auto& d : kDTypes)
        if (dtype_name == d.name) {
            info.dtype = d.dtype;
            return true;
        }
    for (const auto& [u, size] : kKnownUnsupported)
        if (dtype_name == u) unsupported_size = size;
    if (unsupported_size == 0) fail(path, where + "unknown dtype '" + dtype_name + "'");
    return false;
}

// The shape into info.shape; returns the element count (a Format error when it overflows).
uint64_t read_shape(const std::string& path, const std::string& where, const Json& entry, TensorInfo& info,
                    uint64_t elem) {
    auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) fail(path, where + "missing or non-list 'shape'");
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : *shape_it) {
        if (!d.is_number_unsigned())
            fail(path, where + "shape dimension " + std::to_string(info.shape.size()) + " is not a non-negative integer");
        const uint64_t dim = d.get<uint64_t>();
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
        else if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
        else numel *= dim;
        info.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(dim, std::numeric_limits<int64_t>::max())));
    }
    if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem)
        fail(path, where + "shape " + shape_to_string(info.shape) + " is too large");
    return numel;
}

// One tensor's header entry. `unsupported` receives the first valid but unsupported dtype's message.
TensorInfo read_entry(const std::string& path, const std::string& name, const Json& entry, uint64_t data_size,
                      std::string& unsupported) {
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object()) fail(path, where + "header entry is not an object");
    TensorInfo info;
    info.name = name;
    std::string dtype_name;
    size_t unsupported_size = 0;
    const bool known = read_dtype(path, where, entry, info, dtype_name, unsupported_size);
    if (!known && unsupported.empty()) unsupported = where + "dtype " + dtype_name + " is not supported";
    const uint64_t elem = known ? dtype_size(info.dtype) : unsupported_size;
    const uint64_t numel = read_shape(path, where, entry, info, elem);

    auto off_it = entry.find("data_offsets");
    if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2 ||
        !(*off_it)[0].is_number_unsigned() || !(*off_it)[1].is_number_unsigned())
        fail(path, where + "'data_offsets' must be two non-negative integers");
    info.begin = (*off_it)[0].get<uint64_t>();
    info.end = (*off_it)[1].get<uint64_t>();
    const std::string offsets = "[" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]";
    if (info.end < info.begin) fail(path, where + "data_offsets " + offsets + " end before they begin");
    if (info.end > data_size)
        fail(path, where + "data_offsets " + offsets + " lie outside the data section (" + std::to_string(data_size) +
                       " bytes; truncated file?)");
    if (numel * elem != info.nbytes())
        fail(path, where + "shape " + shape_to_string(info.shape) + " of dtype " + dtype_name + " needs " +
                       std::to_string(numel * elem) + " bytes but data_offsets " + offsets + " span " +
                       std::to_string(info.nbytes()));
    return info;
}

// The tensors must tile the data section, as the reference implementation (safetensors'
// Metadata::validate) requires: in offset order each starts where the previous one ends, the
// first at 0, the last at the end of the file. A gap or bytes left over mean a header that does
// not describe its file (a wrong header length, a truncated or spliced file).
void check_tiling(const std::string& path, const std::vector<TensorInfo>& tensors, uint64_t data_size) {
    std::vector<const TensorInfo*> sorted;
    for (const auto& t : tensors) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo* t : sorted) {
        if (t->begin < covered)
            fail(path, "tensor '" + t->name + "' overlaps tensor '" + previous->name + "' in the data section");
        if (t->begin > covered)
            fail(path, "tensor '" + t->name + "' starts at byte " + std::to_string(t->begin) + " of the data section but " +
                           (previous ? "tensor '" + previous->name + "' ends at byte " + std::to_string(covered)
                                     : std::string("nothing comes before it")) +
                           ": a safetensors data section has no gaps");
        covered = t->end;
        previous = t;
    }
    if (covered != data_size)
        fail(path, "the tensors cover " + std::to_string(covered) + " bytes but the data section has " +
                       std::to_string(data_size) + " (wrong header length, or bytes appended to the file?)");
}

}  // namespace

void SafetensorsFile::parse_and_validate() {
    const std::string& path = mapping_->path();
    uint64_t data_size = 0;
    // Any JSON object, whitespace around it included, as the reference implementation reads it.
    const Json header = json::parse(header_text(*mapping_, &data_size), path);
    data_section_ = mapping_->data() + (mapping_->size() - data_size);
    if (!header.is_object()) fail(path, "header is not a JSON object");

    tensors_.reserve(header.size());
    std::string unsupported;  // the first tensor of a valid but unsupported dtype
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() != "__metadata__") {
            tensors_.push_back(read_entry(path, it.key(), it.value(), data_size, unsupported));
            continue;
        }
        const Json& entry = it.value();
        if (entry.is_null()) continue;  // the reference implementation reads null as no metadata
        if (!entry.is_object()) fail(path, "'__metadata__' must be an object of strings");
        for (auto m = entry.begin(); m != entry.end(); ++m) {
            if (!m.value().is_string()) fail(path, "'__metadata__' value of '" + m.key() + "' is not a string");
            metadata_[m.key()] = m.value().get<std::string>();
        }
    }
    check_tiling(path, tensors_, data_size);
    if (!unsupported.empty()) throw Error(ErrorKind::Unsupported, path, unsupported);
    for (size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::at(const std::string& name) const {
    const TensorInfo* info = find(name);
    if (!info) throw Error(ErrorKind::NotFound, path(), "no tensor named '" + name + "'");
    return *info;
}

// ---------------------------------------------------------------------------------------------

void SafetensorsCheckpoint::add_entry(const std::string& name, const SafetensorsFile* file, const TensorInfo* info) {
    entries_[name] = Entry{file, info};
}

std::shared_ptr<SafetensorsCheckpoint> SafetensorsCheckpoint::open_file(const std::string& path) {
    auto ckpt = std::make_shared<SafetensorsCheckpoint>();
    ckpt->source_path_ = path;
    ckpt->shards_.push_back(SafetensorsFile::open(path));
    const auto& file = *ckpt->shards_.front();
    for (const auto& t : file.tensors()) {
        ckpt->add_entry(t.name, &file, &t);
        ckpt->names_.push_back(t.name);
    }
    std::sort(ckpt->names_.begin(), ckpt->names_.end());
    return ckpt;
}

std::shared_ptr<SafetensorsCheckpoint> SafetensorsCheckpoint::open_index(const std::string& index_path) {
    auto ckpt = std::make_shared<SafetensorsCheckpoint>();
    ckpt->source_path_ = index_path;
    ckpt->sharded_ = true;
    const Json index = json::parse_file(index_path);
    json::ObjectReader reader(index, index_path);
    const Json* weight_map = reader.find("weight_map");
    if (!weight_map || !weight_map->is_object())
        throw Error(ErrorKind::Format, index_path, "missing or non-object 'weight_map'");
    if (weight_map->empty()) throw Error(ErrorKind::Format, index_path, "'weight_map' is empty");

    const std::string dir = dirname_of(index_path);
    std::map<std::string, const SafetensorsFile*> opened;
    for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
        const std::string& tensor = it.key();
        if (!it.value().is_string())
            throw Error(ErrorKind::Format, index_path, "weight_map entry for tensor '" + tensor + "' is not a file name");
        const std::string shard = it.value().get<std::string>();
        // Shards live next to the index; a path elsewhere is malformed (and a traversal risk).
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
            throw Error(ErrorKind::Format, index_path,
                        "weight_map entry for tensor '" + tensor + "' names '" + shard + "', not a file in this directory");
        auto found = opened.find(shard);
        if (found == opened.end()) {
            const std::string shard_path = paths::join(dir, shard);
            if (!paths::is_regular_file(shard_path))
                throw Error(ErrorKind::NotFound, index_path,
                            "shard '" + shard + "' (holding tensor '" + tensor + "') does not exist");
            ckpt->shards_.push_back(SafetensorsFile::open(shard_path));
            found = opened.emplace(shard, ckpt->shards_.back().get()).first;
        }
        const TensorInfo* info = found->second->find(tensor);
        if (!info)
            throw Error(ErrorKind::Format, index_path,
                        "tensor '" + tensor + "' is mapped to shard '" + shard + "', which does not contain it");
        ckpt->add_entry(tensor, found->second, info);
        ckpt->names_.push_back(tensor);
    }
    std::sort(ckpt->names_.begin(), ckpt->names_.end());
    return ckpt;
}

std::shared_ptr<SafetensorsCheckpoint> SafetensorsCheckpoint::open_dir(const std::string& dir, const std::string& stem) {
    const std::string single = paths::join(dir, stem + ".safetensors");
    if (paths::is_regular_file(single)) return open_file(single);
    const std::string index = paths::join(dir, stem + ".safetensors.index.json");
    if (paths::is_regular_file(index)) return open_index(index);
    throw Error(ErrorKind::NotFound, dir, "no " + stem + ".safetensors or " + stem + ".safetensors.index.json");
}

const SafetensorsCheckpoint::Entry* SafetensorsCheckpoint::find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
}

uint64_t SafetensorsCheckpoint::file_bytes() const {
    uint64_t total = 0;
    for (const auto& s : shards_) total += s->file_bytes();
    return total;
}

std::shared_ptr<SafetensorsCheckpoint> open_model_checkpoint(const std::string& dir, bool allow_pickle) {
    const bool has_safetensors = paths::is_regular_file(paths::join(dir, "model.safetensors")) ||
                                 paths::is_regular_file(paths::join(dir, "model.safetensors.index.json"));
    if (!has_safetensors) {
        const std::string bin = paths::join(dir, "pytorch_model.bin");
        const std::string bin_index = paths::join(dir, "pytorch_model.bin.index.json");
        const std::string pickle = paths::is_regular_file(bin) ? bin : paths::is_regular_file(bin_index) ? bin_index : "";
        if (!pickle.empty() && !allow_pickle)
            throw Error(ErrorKind::Unsafe, pickle,
                        "refusing a pickled PyTorch checkpoint: unpickling runs arbitrary code from the file. "
                        "Convert it to safetensors in a trusted environment "
                        "(model.save_pretrained(dir, safe_serialization=True)), or opt in explicitly");
        if (!pickle.empty())
            throw Error(ErrorKind::Unsupported, pickle,
                        "loading pickled checkpoints (the explicit opt-in) is not implemented yet; "
                        "convert the checkpoint to safetensors");
    }
    return SafetensorsCheckpoint::open_dir(dir);
}

}  // namespace lorascope::io
