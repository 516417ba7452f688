// A checkpoint's config.json and generation_config.json (parts: config, then generation config;
// a missing part means the file is absent), and the default generation parameters they resolve to.
#include "fuzz_support.h"
#include "lorascope/config.h"
#include "lorascope/params.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 2);
    const std::string dir = fuzz::write_parts(parts, {"config.json", "generation_config.json"});
    LORASCOPE_FUZZ_PARSE({
        const ModelConfig model = load_model_config(dir);
        (void)model.vocab_size();
        (void)to_string(model.family);
        const GenerationConfig generation = load_generation_config(dir, model);
        const ResolvedGenerationParams resolved = resolve(GenerationParams{}, generation, dir + "/generation_config.json");
        for (int64_t length : {0, 1, 7, 512}) {
            LORASCOPE_FUZZ_PARSE({
                (void)resolved.max_new_tokens_for(length);
                (void)resolved.min_new_tokens_for(length);
            });
        }
    });
    return 0;
}
