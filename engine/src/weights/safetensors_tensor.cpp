#include "weights/safetensors_tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace lorascope::weights {

using io::DType;
using io::MappedFile;
using io::SafetensorsFile;
using io::TensorInfo;
using io::dtype_size;

// Gives the page cache back for a converted tensor's source bytes: only whole pages strictly
// inside the tensor's range, which no other tensor (and so no zero-copy view) shares.
void release_source_pages(uint8_t* begin, size_t nbytes) {
    static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(begin) + nbytes) & ~(page - 1);
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

at::ScalarType scalar_type_of(DType dtype) {
    switch (dtype) {
        case DType::F64: return at::kDouble;
        case DType::F32: return at::kFloat;
        case DType::F16: return at::kHalf;
        case DType::BF16: return at::kBFloat16;
        case DType::I64: return at::kLong;
        case DType::I32: return at::kInt;
        case DType::I16: return at::kShort;
        case DType::I8: return at::kChar;
        case DType::U8: return at::kByte;
        case DType::Bool: return at::kBool;
    }
    return at::kFloat;
}

at::Tensor tensor_from_safetensors(const SafetensorsFile& file, const TensorInfo& info,
                                   at::ScalarType floating_dtype, at::Device device, bool* zero_copy,
                                   bool release_source) {
    const at::ScalarType stored = scalar_type_of(info.dtype);
    const at::ScalarType wanted = is_floating(info.dtype) ? floating_dtype : stored;
    const auto stored_options = at::TensorOptions().dtype(stored).device(at::kCPU);
    uint8_t* bytes = file.data(info);
    if (zero_copy) *zero_copy = false;
    if (info.numel() == 0) return at::empty(info.shape, at::TensorOptions().dtype(wanted).device(device));

    at::Tensor source;
    const bool aligned = reinterpret_cast<uintptr_t>(bytes) % dtype_size(info.dtype) == 0;
    if (aligned) {
        std::shared_ptr<MappedFile> keep_alive = file.mapping();
        source = at::from_blob(bytes, info.shape, [keep_alive](void*) {}, stored_options);
    } else {
        source = at::empty(info.shape, stored_options);
        std::memcpy(source.data_ptr(), bytes, info.nbytes());
    }
    if (wanted == stored && device.is_cpu()) {
        if (zero_copy) *zero_copy = aligned;
        return source;
    }
    at::Tensor result = source.to(device, wanted, /*non_blocking=*/false, /*copy=*/true);
    if (aligned && release_source) release_source_pages(bytes, info.nbytes());
    return result;
}

}  // namespace lorascope::weights
