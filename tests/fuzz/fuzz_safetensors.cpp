// A downloaded model.safetensors: the 8-byte header length, the JSON header (dtypes, shapes,
// data_offsets, __metadata__) and the data section they describe. Once a file is accepted every
// tensor must lie inside the mapping, so later reads can trust the offsets.
#include <cstdlib>

#include "fuzz_support.h"
#include "io/safetensors.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path =
        fuzz::write_file("model.safetensors", std::string_view(reinterpret_cast<const char*>(data), size));
    LORASCOPE_FUZZ_PARSE({
        const auto ckpt = io::SafetensorsCheckpoint::open_file(path);
        const auto& file = *ckpt->shards().front();
        const uint8_t* begin = file.mapping()->data();
        const uint8_t* end = begin + file.mapping()->size();
        volatile uint8_t sink = 0;
        for (const auto& name : ckpt->names()) {
            const auto* entry = ckpt->find(name);
            if (!entry || entry->info->name != name) std::abort();
            const auto& info = *entry->info;
            const uint8_t* p = file.data(info);
            if (p < begin || p + info.nbytes() > end || p + info.nbytes() < p) std::abort();
            if (info.nbytes() != static_cast<uint64_t>(info.numel()) * io::dtype_size(info.dtype)) std::abort();
            if (info.nbytes() > 0) sink = sink + p[0] + p[info.nbytes() - 1];
            (void)io::shape_to_string(info.shape);
        }
        for (const auto& [key, value] : file.metadata()) sink = sink + static_cast<uint8_t>(key.size() + value.size());
        (void)sink;
    });
    return 0;
}
