// check_request_budget (lorascope/params.h): one request against the engine's limits and the
// model's positions, in checked arithmetic.
#include "lorascope/error.h"
#include "lorascope/params.h"
#include "util/checked_math.h"

namespace lorascope {

namespace {

[[noreturn]] void too_large(const std::string& source, const std::string& what) {
    throw Error(ErrorKind::InvalidArgument, source, what);
}

}  // namespace

void check_request_budget(int64_t rows, int64_t prompt_tokens, int64_t max_new_tokens, const RequestBudget& budget,
                          const std::string& source) {
    if (rows < 1 || prompt_tokens < 0 || max_new_tokens < 0)
        too_large(source, "a request needs at least one row and no negative length (rows " + std::to_string(rows) +
                              ", prompt " + std::to_string(prompt_tokens) + ", max_new_tokens " +
                              std::to_string(max_new_tokens) + ")");
    if (rows > budget.max_batch_size)
        too_large(source, "the request needs " + std::to_string(rows) +
                              " batch rows (num_beams, or num_return_sequences when sampling), more than the engine's "
                              "max_batch_size (" + std::to_string(budget.max_batch_size) + ")");
    if (budget.context_tokens) {
        const int64_t context = *budget.context_tokens;
        if (budget.encoder_decoder) {
            if (prompt_tokens > context)
                too_large(source, "the prompt is " + std::to_string(prompt_tokens) + " tokens, more than the model's " +
                                      std::to_string(context) + " positions");
            if (max_new_tokens >= context)   // the decoder start token takes a position too
                too_large(source, "max_new_tokens " + std::to_string(max_new_tokens) + " (plus the decoder start token) "
                                  "is more than the model's " + std::to_string(context) + " positions");
        } else {
            const auto total = util::checked_add(prompt_tokens, max_new_tokens);
            if (!total || *total > context)
                too_large(source, "prompt (" + std::to_string(prompt_tokens) + " tokens) + max_new_tokens (" +
                                      std::to_string(max_new_tokens) + ") is more than the model's " +
                                      std::to_string(context) + " positions");
        }
    }
    // Admission's cost (batching/admission.h): rows x (prompt + new tokens), padding included.
    const auto positions = util::checked_add(prompt_tokens, max_new_tokens);
    const auto cost = positions ? util::checked_mul(rows, *positions) : std::nullopt;
    if (!cost || *cost > budget.max_batch_tokens)
        too_large(source, "prompt (" + std::to_string(prompt_tokens) + " tokens) + max_new_tokens (" +
                              std::to_string(max_new_tokens) + ")" +
                              (rows > 1 ? " times " + std::to_string(rows) + " rows" : std::string()) +
                              " is more than the engine's max_batch_tokens (" +
                              std::to_string(budget.max_batch_tokens) + ")");
}

}  // namespace lorascope
