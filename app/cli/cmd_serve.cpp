// lorascope-cli serve: the engine behind LoRAX's HTTP API, so that scripts written for a LoRAX
// server (lorax-client, curl, OpenAI clients) run unchanged against one machine.
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "args.h"
#include "commands.h"
#include "demo_option.h"
#include "engine_options.h"
#include "http_server.h"
#include "jsonl_io.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"

namespace lorascope::cli {

namespace {

using nlohmann::json;

const char* const kUsage =
    "usage: lorascope-cli serve --model DIR [--adapter NAME=DIR]... [--host 127.0.0.1] [--port 8080]\n"
    "         [--api-token-file FILE] [--max-connections 64] [--max-open-connections 4096] [--max-body-bytes 1048576]\n"
    "         [--max-header-bytes 16384] [--request-timeout-seconds 30] [--keep-alive-seconds 5]\n"
    "         [--shutdown-grace-seconds 30] [--adapter-dir DIR] [--goodput-ttft-ms MS] [--goodput-tpot-ms MS]\n"
    "         [--threads N] [--thread-policy adaptive|fixed] [--device cpu|cuda] [--dtype float32|bfloat16|int8|int4|float16] [--max-batch-size N]\n"
    "         [--kv-cache-dtype auto|float32|bfloat16|float16] [--max-batch-tokens N] [--adapter-memory-budget BYTES]\n"
    "         [--kv-cache-mb MIB] [--batching continuous|static] [--prefill-budget TOKENS | --tpot-target-ms MS\n"
    "         [--tpot-tail-share S]] [--prefill-chunk TOKENS] [--queue-order arrival|pack]\n"
    "       lorascope-cli serve --demo [--demo-model t5|bart|bloom|llama] [--demo-dir DIR] [options above]\n"
    "  LoRAX's HTTP API: POST / , /generate, /generate_stream (Server-Sent Events), /v1/completions (OpenAI;\n"
    "  `model` names an adapter or the base), /v1/chat/completions (OpenAI's chat: the model's chat template\n"
    "  renders `messages`; LoRAX's chat form is /generate with apply_chat_template); GET /health, /info,\n"
    "  /metrics (Prometheus), /v1/models.\n"
    "  `adapter_id` selects an adapter loaded with --adapter; an unknown one is answered 422.\n"
    "  --adapter-dir DIR: requests with \"adapter_source\": \"local\" may name adapter directories under DIR\n"
    "          (relative to it or absolute); a path leaving it (.., a symbolic link) is answered 422.\n"
    "  --port 0 picks a free port. The first line on stdout is {\"listening\": \"http://HOST:PORT\", ...}.\n"
    "  API token: the environment variable LORASCOPE_API_TOKEN or the first line of --api-token-file (--api-token\n"
    "          TOKEN works too, but any user can read a command line in ps). Every route but /health then needs\n"
    "          'Authorization: Bearer TOKEN', checked before any of a request's body is read. It is never printed.\n"
    "  --max-connections: requests served at once; more are answered 429 (error_type \"overloaded\").\n"
    "  --max-open-connections: sockets held, idle and slow ones included; past it the one waiting longest without\n"
    "          being served is closed for the newcomer.\n"
    "  --max-body-bytes, --max-header-bytes: larger request bodies are answered 413, larger heads 431.\n"
    "  --request-timeout-seconds: a request's headers and body must arrive within it (from its first byte);\n"
    "  --keep-alive-seconds: an idle connection is closed after it.\n"
    "  --goodput-ttft-ms / --goodput-tpot-ms: /metrics' lorascope_goodput_* count the requests that finished within\n"
    "          both (0 or absent: no bound; the per-token one defaults to --tpot-target-ms), as bench counts them.\n"
    "  Batching (--batching, --prefill-budget, --tpot-target-ms, --tpot-tail-share, --prefill-chunk, --queue-order):\n"
    "          as lorascope-cli generate --help describes them; --queue-order pack reorders only requests that\n"
    "          arrived between the same two engine steps, so a client's stream keeps its order.\n"
    "  SIGINT/SIGTERM: closes idle connections and answers new requests 503 (closing after); running ones finish (up\n"
    "          to --shutdown-grace-seconds, then they are cancelled); a second signal cancels them at once.\n";

// "t5" for a demo model, else the directory's last component: what /info and OpenAI's `model` call the base.
std::string model_id_for(const std::string& dir, const ExpandedArgs& expanded) {
    if (expanded.demo) return "demo-" + expanded.demo->model_key;
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    const auto slash = d.rfind('/');
    return slash == std::string::npos ? d : d.substr(slash + 1);
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal"; }

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    const int saved = errno;
    [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
    errno = saved;
}

void install_signal_pipe() {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw Error(ErrorKind::Internal, std::string("cannot create the signal pipe: ") + std::strerror(errno));
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

// A signal that arrives within `ms` milliseconds: its number, or -1.
int signal_within(int ms) {
    pollfd fd{g_signal_pipe[0], POLLIN, 0};
    if (::poll(&fd, 1, ms) <= 0) return -1;
    unsigned char byte = 0;
    return ::read(g_signal_pipe[0], &byte, 1) == 1 ? byte : -1;
}

// Waits for a signal: its number, or -1 once `done` is set.
int wait_for_signal(const std::atomic<bool>& done) {
    while (!done)
        if (const int sig = signal_within(200); sig >= 0) return sig;
    return -1;
}

// Each connection holds a descriptor: the soft limit (1024 by default) would cap the connections
// long before --max-open-connections; the hard limit is the operator's.
void raise_descriptor_limit(int64_t wanted) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    const rlim_t target = std::min<rlim_t>(limit.rlim_max, static_cast<rlim_t>(wanted));
    if (limit.rlim_cur < target) {
        limit.rlim_cur = target;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

std::string read_token_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open the API token file");
    std::string token;
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.empty()) throw Error(ErrorKind::InvalidArgument, path, "the API token file's first line is empty");
    return token;
}

long long in_range(const Args& args, const char* key, long long fallback, long long low, long long high) {
    const long long v = args.get_int(key, fallback);
    if (v < low || v > high)
        throw Error(ErrorKind::InvalidArgument, std::string("--") + key + " must be in " + std::to_string(low) + ".." +
                                                    std::to_string(high));
    return v;
}

serve::ServeOptions serve_options_from(const Args& args) {
    serve::ServeOptions o;
    serve::ServeLimits& l = o.limits;
    o.host = args.get_or("host", "127.0.0.1");
    o.port = static_cast<int>(in_range(args, "port", 8080, 0, 65535));
    l.max_connections = static_cast<int>(in_range(args, "max-connections", l.max_connections, 1, 65536));
    l.max_open_connections = static_cast<int>(in_range(args, "max-open-connections", l.max_open_connections, 1, 1 << 20));
    l.max_body_bytes = in_range(args, "max-body-bytes", l.max_body_bytes, 1, int64_t(1) << 30);
    l.max_header_bytes = in_range(args, "max-header-bytes", l.max_header_bytes, 1024, int64_t(1) << 20);
    l.request_timeout = std::chrono::seconds(in_range(args, "request-timeout-seconds", l.request_timeout.count(), 1, 3600));
    l.keep_alive_timeout = std::chrono::seconds(in_range(args, "keep-alive-seconds", l.keep_alive_timeout.count(), 1, 3600));
    o.adapter_dir = args.get_or("adapter-dir", "");
    o.goodput.ttft_ms = args.get_double("goodput-ttft-ms", 0);
    o.goodput.tpot_ms = args.get_double("goodput-tpot-ms", args.get_double("tpot-target-ms", 0));
    if (o.goodput.ttft_ms < 0 || o.goodput.tpot_ms < 0)
        throw Error(ErrorKind::InvalidArgument, "--goodput-ttft-ms and --goodput-tpot-ms must be >= 0 (ms; 0 = no bound)");
    if (const char* env = std::getenv("LORASCOPE_API_TOKEN")) o.api_token = env;
    if (auto file = args.get("api-token-file")) o.api_token = read_token_file(*file);
    if (auto token = args.get("api-token")) {
        std::fprintf(stderr, "lorascope-cli serve: --api-token shows the token to every user of this machine (ps); "
                             "prefer LORASCOPE_API_TOKEN or --api-token-file\n");
        o.api_token = *token;
    }
    return o;
}

json info_json(const Engine& engine, const serve::ServedModel& model, const EngineOptions& e,
               const serve::ServeOptions& o) {
    json adapters = json::array();
    for (const auto& a : engine.adapters())
        adapters.push_back({{"name", a.name}, {"rank", a.rank}, {"alpha", a.alpha}, {"targets", a.targets}});
    const int64_t max_input = model.budget.context_tokens ? std::min(*model.budget.context_tokens, e.max_batch_tokens - 1)
                                                          : e.max_batch_tokens - 1;
    return {{"model_id", model.model_id},
            {"model_sha", nullptr},
            {"model_dtype", "torch." + e.dtype},
            {"model_device_type", e.device.substr(0, e.device.find(':'))},
            {"model_pipeline_tag", model.encoder_decoder ? "text2text-generation" : "text-generation"},
            {"max_concurrent_requests", o.limits.max_connections},
            {"max_best_of", 1},
            {"max_stop_sequences", model.params.max_stop_sequences},
            {"max_input_length", max_input},
            {"max_total_tokens", e.max_batch_tokens},
            {"waiting_served_ratio", 0},
            {"max_batch_total_tokens", e.max_batch_tokens},
            {"max_waiting_tokens", 0},
            {"validation_workers", o.limits.workers},
            {"eager_prefill", false},
            {"version", "lorascope " LORASCOPE_VERSION},
            {"sha", nullptr},
            {"docker_label", nullptr},
            {"request_logger_url", nullptr},
            {"model_family", to_string(engine.model_config().family)},
            {"max_batch_size", e.max_batch_size},
            {"adapters", adapters}};
}

serve::ServedModel served_model(const Engine& engine, const EngineOptions& e, const ExpandedArgs& expanded) {
    serve::ServedModel model;
    model.model_id = model_id_for(e.model_dir, expanded);
    for (const auto& a : engine.adapters()) {
        model.adapters.push_back(a.name);
        model.adapter_ranks[a.name] = a.rank;
    }
    model.generation_config = engine.generation_config();
    const ModelConfig& config = engine.model_config();
    model.encoder_decoder = config.is_encoder_decoder();
    model.decoder_start_token_id = decoder_start_token_id(config, model.generation_config);
    model.budget = RequestBudget{e.max_batch_tokens, e.max_batch_size, config.context_tokens(), model.encoder_decoder};
    return model;
}

// SIGINT and SIGTERM: the handler only writes the signal's number to a pipe (async-signal-safe,
// and right on whichever thread the kernel picks: OpenBLAS and OpenMP start threads before main,
// so a signal mask set here would not cover them); this thread does the shutdown.
void watch_signals(serve::LoraxServer& server, const std::atomic<bool>& done, long long grace_s) {
    const int sig = wait_for_signal(done);
    if (sig < 0) return;
    server.begin_drain();
    std::fprintf(stderr, "lorascope-cli serve: %s: finishing %lld running request(s) (up to %lld s; again to cancel them)\n",
                 signal_name(sig), static_cast<long long>(server.requests_in_flight()), grace_s);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_s);
    while (server.requests_in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
        if (signal_within(100) >= 0) {
            std::fprintf(stderr, "lorascope-cli serve: second signal: cancelling what is left\n");
            break;
        }
    }
    server.stop();
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    ExpandedArgs expanded = expand_demo_args(argc, argv);
    Args args(expanded.argc(), expanded.argv.data(), 2, {"help", "demo"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::vector<std::string> known = {"help", "demo", "host", "port", "api-token", "api-token-file", "max-connections",
                                      "max-open-connections", "max-body-bytes", "max-header-bytes",
                                      "request-timeout-seconds", "keep-alive-seconds", "shutdown-grace-seconds",
                                      "adapter-dir", "goodput-ttft-ms", "goodput-tpot-ms"};
    for (const auto& k : engine_option_names())
        if (k != "profile") known.push_back(k);
    for (const auto& k : demo_option_names()) known.push_back(k);
    args.allow_only(known);

    const serve::ServeOptions options = serve_options_from(args);
    const long long grace_s = in_range(args, "shutdown-grace-seconds", 30, 0, 24 * 3600);
    raise_descriptor_limit(int64_t(options.limits.max_open_connections) + 256);

    const EngineOptions engine_options = engine_options_from(args);
    auto engine = create_engine_with_adapters(args, engine_options);
    auto tokenizer = load_tokenizer_if_present(engine_options.model_dir);
    serve::ServedModel model = served_model(*engine, engine_options, expanded);
    json info = info_json(*engine, model, engine_options, options);
    const std::vector<std::string> adapter_names = model.adapters;

    serve::LoraxServer server(*engine, std::move(model), tokenizer.get(), options, std::move(info));
    const int port = server.bind();
    // One JSON line on stdout, so that scripts and tests learn the port (--port 0) and what is served.
    std::printf("%s\n", json({{"listening", "http://" + options.host + ":" + std::to_string(port)},
                              {"model_id", server.context().model.model_id},
                              {"adapters", adapter_names},
                              {"authentication", !options.api_token.empty()}})
                            .dump()
                            .c_str());
    std::fflush(stdout);

    install_signal_pipe();
    std::atomic<bool> done{false};
    std::thread signal_thread([&] { watch_signals(server, done, grace_s); });
    const bool ok = server.run();
    done = true;
    signal_thread.join();
    engine->cancel_all();
    std::fprintf(stderr, "lorascope-cli serve: stopped\n");
    if (!ok) throw Error(ErrorKind::Internal, options.host + ":" + std::to_string(port), "the listening socket failed");
    return 0;
}

}  // namespace lorascope::cli
