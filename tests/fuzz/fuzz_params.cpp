// The one parameter parser (lorascope/params.h) on hostile JSON: any text, deep or huge, is
// parsed with its depth and size bounded while parsing, and every value it accepts resolves and
// checks against a budget without an exception other than lorascope::Error. A parsed value
// dumps and parses back to itself (its depth is bounded, so dumping is safe).
#include "fuzz_support.h"
#include "lorascope/json_input.h"
#include "lorascope/params.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    LORASCOPE_FUZZ_PARSE({
        const nlohmann::json value = parse_json_input(text, "fuzz", JsonLimits{64, 1 << 20});
        if (parse_json_input(value.dump(), "fuzz again") != value) std::abort();
    });
    LORASCOPE_FUZZ_PARSE({
        const GenerationParams params = parse_generation_params(text, "params");
        GenerationConfig config;
        config.eos_token_ids = {1};
        const ResolvedGenerationParams resolved = resolve(params, config, "params");
        RequestBudget budget;
        budget.context_tokens = 1024;
        budget.encoder_decoder = (size & 1) != 0;
        const int64_t rows = resolved.num_beams > 1 ? resolved.num_beams : resolved.num_return_sequences;
        check_request_budget(rows, 7, resolved.max_new_tokens_for(budget.encoder_decoder ? 1 : 7), budget, "params");
    });
    return 0;
}
