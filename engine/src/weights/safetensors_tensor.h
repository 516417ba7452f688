// at::Tensor views of memory-mapped safetensors data (used by WeightStore and adapter loading).
#pragma once

#include <ATen/ATen.h>

#include "io/safetensors.h"

namespace lorascope::weights {

at::ScalarType scalar_type_of(io::DType dtype);

// The tensor `info` of `file` with floating dtypes converted to `floating_dtype` on `device`
// (integer and bool tensors keep their dtype). When nothing needs converting or moving and the
// data is aligned, the result is a zero-copy view of the mapping whose deleter keeps the mapping
// alive; otherwise exactly one converted copy is made.
// release_source: after a conversion, hand the source pages back to the kernel (MADV_DONTNEED) so
// that peak memory stays near the converted size. Only safe when no zero-copy view of the same
// tensor from this mapping exists (a view written to would lose its private copy).
// Hands the pages strictly inside [begin, begin + nbytes) of a mapping back to the kernel
// (MADV_DONTNEED): they leave this process's RSS and are read from the file again if touched.
void release_source_pages(uint8_t* begin, size_t nbytes);

at::Tensor tensor_from_safetensors(const io::SafetensorsFile& file, const io::TensorInfo& info,
                                   at::ScalarType floating_dtype, at::Device device,
                                   bool* zero_copy = nullptr, bool release_source = false);

}  // namespace lorascope::weights
