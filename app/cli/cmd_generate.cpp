// lorascope-cli generate: JSON Lines requests through the engine (continuous batching, every
// sampling control, adapters). One output line per request, in completion order.
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "args.h"
#include "commands.h"
#include "demo_option.h"
#include "engine_options.h"
#include "jsonl_io.h"
#include "request_json.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/finish_json.h"
#include "lorascope/local_adapters.h"
#include "lorascope/params.h"

namespace lorascope::cli {

namespace {

using nlohmann::json;

const char* const kUsage =
    "usage: lorascope-cli generate --model DIR [--adapter NAME=DIR]... [--threads N] [--thread-policy adaptive|fixed]\n"
    "         [--device cpu|cuda]\n"
    "         [--dtype float32|bfloat16|int8|int4|float16] [--kv-cache-dtype auto|float32|bfloat16|float16]\n"
    "         [--max-batch-size N] [--max-batch-tokens N] [--adapter-memory-budget BYTES] [--kv-cache-mb MIB]\n"
    "         [--batching continuous|static] [--prefill-budget TOKENS | --tpot-target-ms MS [--tpot-tail-share S]]\n"
    "         [--prefill-chunk TOKENS] [--queue-order arrival|pack] [--profile FILE]\n"
    "         [--input FILE|-] [--output FILE|-] [--stats FILE] [--adapter-dir DIR] [--src-lang CODE] [--tgt-lang CODE]\n"
    "       lorascope-cli generate --demo [--demo-model t5|bart|bloom|llama] [--demo-dir DIR] [options above]\n"
    "  input:  JSON Lines {\"id\", \"prompt\" | \"input_ids\" | \"messages\", \"adapter\", \"params\": {max_new_tokens, min_new_tokens,\n"
    "          do_sample, temperature, top_k, top_p, typical_p, min_p, repetition_penalty, no_repeat_ngram_size,\n"
    "          num_beams, num_return_sequences, length_penalty, early_stopping, stop, seed, ignore_eos, logprobs,\n"
    "          top_alternatives, prompt_logprobs, best_of, truncate, src_lang, tgt_lang},\n"
    "          \"messages\": [{\"role\", \"content\", ...}] (with optional \"tools\", \"chat_template_kwargs\"): a conversation the\n"
    "          model's chat template renders (add_generation_prompt), as lorascope-cli chat-template prints it\n"
    "          \"merged_adapters\": {ids, weights, merge_strategy (linear|ties|dare_linear|dare_ties), density,\n"
    "          majority_sign_method (total|frequency), seed}, \"adapter_source\": \"local\" (\"adapter\" is then a path\n"
    "          under --adapter-dir), \"target\" | \"target_ids\" (encoder-decoder prompt_logprobs: the text scored),\n"
    "          \"decoder_prefix_ids\" (encoder-decoder: tokens forced after the decoder start token; output continues them)}\n"
    "  output: JSON Lines {\"id\", \"text\", \"token_ids\", \"finish_reason\", \"prompt_tokens\", \"generated_tokens\",\n"
    "          \"queue_ms\", \"time_to_first_token_ms\", \"total_ms\",\n"
    "          \"stop_sequence\" (finish_reason stop: the one that matched), \"logprobs\" (when asked),\n"
    "          \"alternatives\" (top_alternatives: per token [{\"token_id\", \"logprob\", \"text\"}]), \"prompt_logprobs\"\n"
    "          (when asked: [{\"token_id\", \"text\", \"logprob\"}]), \"sequences\" (num_return_sequences or best_of > 1:\n"
    "          [{\"text\", \"token_ids\", \"score\" (beams; best_of: mean logprob), \"logprobs\", \"alternatives\"}],\n"
    "          best first, the first being text/token_ids), \"error\" (when the request failed)}, in completion order\n"
    "  --adapter-dir DIR: requests with \"adapter_source\": \"local\" may name adapter directories under DIR\n"
    "          (and nowhere else: \"..\", other absolute paths and links leaving DIR are refused)\n"
    "  src_lang, tgt_lang (mBART-50, NLLB: lorascope-cli info lists the codes): the prompt is tokenized with\n"
    "          src_lang's code as Hugging Face places it, and tgt_lang's code is forced as the first generated token;\n"
    "          --src-lang / --tgt-lang: the same for every line whose params do not name one (--src-lang: lines\n"
    "          with a \"prompt\" only, as input_ids and messages are not tokenized with a language)\n"
    "  --stats FILE: one JSON line per engine step\n"
    "  --profile FILE (LibTorch 2.x builds): device kernel launches and engine steps, as JSON, written at the end\n"
    "  --kv-cache-dtype: what the KV cache stores (default auto: bfloat16 under --dtype int8, int4 or bfloat16 on\n"
    "          the CPU, half the cache's memory, attention still in float32; the model's type otherwise)\n"
    "  --kv-cache-mb: the KV cache's size (default: from the model and the free memory); requests that\n"
    "          do not fit wait in the queue\n"
    "  prefill beside running requests: by default the budget in time: each step prefills what keeps it\n"
    "          within 1.3x of a typical decoding step (costs measured as the engine runs), filling free rows\n"
    "          as fast as that allows, and a backlog of prompts is prefilled whole in up to 2% of the token gaps\n"
    "          (at most 8 decoding steps long each; --tpot-tail-share 0: never); --tpot-target-ms MS: instead, keep the running requests' per-token\n"
    "          p95 within MS: rows and prefill are admitted as the steps' measured costs allow, and up to\n"
    "          --tpot-tail-share S (default 0.04; 0 = every step within MS) of the token gaps may pass MS in\n"
    "          steps that prefill the waiting newcomers whole (at most 8 x MS long; while requests queue\n"
    "          behind them, only once their gaps over MS are within S of the gaps the newcomers will\n"
    "          decode, but for the first after a row leaves), counting a gap as over when its step passes\n"
    "          MS by more than 5% (the noise of steps planned at MS), so the p95 may land up to ~1.05 x MS;\n"
    "          while steps of decoding alone put more than S/2 of the gaps past that, the rows are planned\n"
    "          for steps that all but 2% of them keep within it; the engine times two\n"
    "          throwaway decoding steps when it starts, so that the first requests are admitted as they allow;\n"
    "          --prefill-budget TOKENS: at most TOKENS prompt tokens per step (0 = no limit);\n"
    "          --prefill-chunk: decoder-only prompt chunks (default: the token budget, at least 128; 32 under a target)\n"
    "  --threads N: compute threads (default: all cores); --thread-policy adaptive (default): at most N, fewer while\n"
    "          other programs keep cores busy (read between steps); fixed: always N\n"
    "  --batching static: no request joins until the running batch has drained (for comparison)\n"
    "  --queue-order pack: requests that arrived together join shortest first (max_new_tokens and, decoder-only,\n"
    "          the prompt weighed by what a prompt token's prefill costs beside a row's decoding), so that most\n"
    "          answers come soonest, and the last batch's worth longest first, so that the batch stays full to\n"
    "          its end (fewer steps; the longest start last); under --tpot-target-ms the end joins shortest first\n"
    "          too (a full batch at its longest contexts runs past the target). Default arrival: first come, first served\n"
    "  --demo: the trained demo pack's model (default t5) with all its adapters; without --input, each example\n"
    "          prompt is decoded under the base model and every adapter in one batch (ids \"exN/<target>\")\n";

const FinishJsonOptions kIdsAsJson{true};

// Writes each finished request as one line; called on the engine thread.
class OutputSink : public RequestSink {
public:
    explicit OutputSink(JsonLineWriter& writer) : writer_(writer) {}

    void on_token(const TokenEvent&) override {}
    void on_finish(const FinishEvent& e) override {
        std::lock_guard<std::mutex> lock(mutex_);
        writer_.write_line(finish_to_json(e, kIdsAsJson));
        ++finished_;
        done_.notify_all();
    }
    // Requests that never reached the engine.
    void write_error(const json& client_id, const std::string& message) {
        FinishEvent failed;
        failed.reason = FinishReason::Error;
        failed.error = message;
        failed.client_id = client_id_for(client_id);
        std::lock_guard<std::mutex> lock(mutex_);
        writer_.write_line(finish_to_json(failed, kIdsAsJson));
    }
    // The engine echoes Request::client_id; this sink sets it to the id's JSON text, so that an
    // id keeps its JSON type (7 and "7" stay apart) and no map of ids grows with the input.
    static std::string client_id_for(const json& id) { return id.dump(); }
    void wait(size_t count) {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return finished_ >= count; });
    }

private:
    JsonLineWriter& writer_;
    std::mutex mutex_;
    std::condition_variable done_;
    size_t finished_ = 0;
};

json stats_line(const StepStats& s) {
    json per_adapter = json::object();
    for (const auto& [name, rows] : s.rows_per_adapter) per_adapter[name.empty() ? "<base>" : name] = rows;
    return {{"step", s.step},
            {"wall_ms", s.wall_ms},
            {"prefill_ms", s.prefill_ms},
            {"rows", s.rows},
            {"prefill_tokens", s.prefill_tokens},
            {"decode_tokens", s.decode_tokens},
            {"padded_tokens", s.padded_tokens},
            {"kv_bytes_allocated", s.kv_bytes_allocated},
            {"kv_bytes_in_use", s.kv_bytes_in_use},
            {"prefill_tokens_deferred", s.prefill_tokens_deferred},
            {"kv_blocks_total", s.kv_blocks_total},
            {"kv_blocks_used", s.kv_blocks_used},
            {"cache_bytes_moved", s.cache_bytes_moved},
            {"cache_bytes_prefilled", s.cache_bytes_prefilled},
            {"queue_depth", s.queue_depth},
            {"row_limit", s.row_limit},
            {"prefill_margin", s.prefill_margin},
            {"row_plan_ms", s.row_plan_ms},
            {"bulk_prefill", s.bulk_prefill},
            {"adapter_bytes", s.adapter_bytes},
            {"rows_per_adapter", per_adapter},
            {"row_requests", s.row_requests},
            {"row_prefill", s.row_prefill},
            {"row_kv_blocks", s.row_kv_blocks}};
}

// The demo tour: every example prompt under the base model and each adapter, all submitted at
// once so that they share one heterogeneous batch.
std::vector<JsonLine> demo_tour_requests(const DemoModel& model) {
    std::vector<JsonLine> lines;
    for (size_t i = 0; i < model.example_prompts.size(); ++i) {
        std::vector<std::string> targets{""};
        for (const auto& a : model.adapters) targets.push_back(a.name);
        for (const auto& t : targets) {
            json r = {{"id", "ex" + std::to_string(i + 1) + "/" + (t.empty() ? "base" : t)},
                      {"prompt", model.example_prompts[i]}};
            if (!t.empty()) r["adapter"] = t;
            lines.push_back(JsonLine{lines.size() + 1, std::move(r), {}, {}});
        }
    }
    return lines;
}

// --src-lang / --tgt-lang for the lines whose params name no language.
void default_languages(const Args& args, Request& request, const std::string& source) {
    if (auto src = args.get("src-lang"); src && !request.params.src_lang && request.prompt) request.params.src_lang = *src;
    if (auto tgt = args.get("tgt-lang"); tgt && !request.params.tgt_lang) request.params.tgt_lang = *tgt;
    check_generation_params(request.params, source);
}

}  // namespace

int cmd_generate(int argc, char** argv) {
    ExpandedArgs expanded = expand_demo_args(argc, argv);
    Args args(expanded.argc(), expanded.argv.data(), 2, {"help", "demo"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::vector<std::string> known = {"help", "input", "output", "stats", "demo", "adapter-dir", "src-lang", "tgt-lang"};
    for (const auto& k : engine_option_names()) known.push_back(k);
    for (const auto& k : demo_option_names()) known.push_back(k);
    args.allow_only(known);

    const EngineOptions options = engine_options_from(args);
    const auto lines = expanded.demo && !args.has("input") ? demo_tour_requests(expanded.demo->model())
                                                           : read_json_lines(args.get_or("input", "-"));
    JsonLineWriter writer(args.get_or("output", "-"));
    std::unique_ptr<JsonLineWriter> stats_writer;
    if (auto path = args.get("stats")) stats_writer = std::make_unique<JsonLineWriter>(*path);

    // Declared before the engine, whose thread calls the listener until the engine is destroyed.
    std::mutex stats_mutex;
    auto engine = create_engine_with_adapters(args, options);
    if (stats_writer) {
        engine->set_stats_listener([&](const StepStats& s) {
            std::lock_guard<std::mutex> lock(stats_mutex);
            stats_writer->write(stats_line(s));
        });
    }

    std::optional<AdapterDirectory> adapter_dir;
    if (auto dir = args.get("adapter-dir")) adapter_dir.emplace(*dir);
    auto sink = std::make_shared<OutputSink>(writer);
    size_t submitted = 0;
    for (const auto& line : lines) {
        const std::string source = "input line " + std::to_string(line.line_number);
        // A line that is not a JSON object has no id: its error line says which line it was.
        json client_id = line.value && line.value->contains("id") ? (*line.value)["id"] : json(nullptr);
        if (!line.value) {
            sink->write_error(client_id, source + ": " + line.parse_error);
            continue;
        }
        try {
            Request request = parse_request(*line.value, source, line.text);
            default_languages(args, request, source);
            if (const auto path = local_adapter_path(*line.value, source)) {
                if (!adapter_dir)
                    throw Error(ErrorKind::InvalidArgument, source,
                                "adapter_source \"local\" needs --adapter-dir DIR (the directory local adapters must be in)");
                request.adapter = load_local_adapter(*engine, *adapter_dir, *path);
            }
            request.client_id = OutputSink::client_id_for(client_id);
            engine->submit(std::move(request), sink);
            ++submitted;
        } catch (const Error& e) {
            sink->write_error(client_id, e.what());
        }
    }
    sink->wait(submitted);
    engine->set_stats_listener(nullptr);
    return 0;
}

}  // namespace lorascope::cli
