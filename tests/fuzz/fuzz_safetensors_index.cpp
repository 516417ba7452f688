// A sharded checkpoint: model.safetensors.index.json (its weight_map names the shard of every
// tensor) and the two shards it may name. Parts: the index, then each shard (tests/fuzz/fuzz_support.h).
#include <cstdlib>

#include "fuzz_support.h"
#include "io/safetensors.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 3);
    const std::string dir = fuzz::write_parts(parts, {"model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                                      "model-00002-of-00002.safetensors"});
    LORASCOPE_FUZZ_PARSE({
        const auto ckpt = io::open_model_checkpoint(dir);
        for (const auto& name : ckpt->names()) {
            const auto* entry = ckpt->find(name);
            if (!entry || entry->info->name != name) std::abort();
            const uint8_t* begin = entry->file->mapping()->data();
            const uint8_t* p = entry->file->data(*entry->info);
            if (p < begin || p + entry->info->nbytes() > begin + entry->file->mapping()->size()) std::abort();
        }
        (void)ckpt->file_bytes();
    });
    return 0;
}
