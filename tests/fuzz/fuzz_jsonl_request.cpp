// The JSON Lines input of lorascope-cli generate/score: every line read the way read_json_lines
// reads it, parsed as a request (fields, prompt or input_ids, adapter, params), its params resolved
// against Hugging Face's generation defaults and its input_ids checked against a vocabulary, as
// the CLI does before the engine sees the request.
#include "fuzz_support.h"
#include "jsonl_io.h"
#include "lorascope/params.h"
#include "request_json.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path =
        fuzz::write_file("requests.jsonl", std::string_view(reinterpret_cast<const char*>(data), size));
    std::vector<cli::JsonLine> lines;
    LORASCOPE_FUZZ_PARSE(lines = cli::read_json_lines(path));
    for (const auto& line : lines) {
        if (!line.value) {
            if (line.parse_error.empty()) std::abort();
            continue;
        }
        const std::string source = "line " + std::to_string(line.line_number);
        LORASCOPE_FUZZ_PARSE({
            const Request request = cli::parse_request(*line.value, source, line.text);
            if (line.value->contains("input_ids")) (void)cli::read_ids(*line.value, "input_ids", 32128, source);
            const ResolvedGenerationParams resolved = resolve(request.params, GenerationConfig{}, source);
            (void)resolved.max_new_tokens_for(static_cast<int64_t>(request.input_ids.size()));
            (void)resolved.min_new_tokens_for(static_cast<int64_t>(request.input_ids.size()));
        });
    }
    return 0;
}
