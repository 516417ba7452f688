// lorascope-cli serve: the engine behind LoRAX's HTTP API, so that scripts written for a LoRAX
// server (lorax-client, curl, OpenAI clients) run unchanged against one machine.
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "args.h"
#include "commands.h"
#include "demo_option.h"
#include "engine_options.h"
#include "jsonl_io.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "serve_server.h"

namespace lorascope::cli {

namespace {

using nlohmann::json;

const char* const kUsage =
    "usage: lorascope-cli serve --model DIR [--adapter NAME=DIR]... [--host 127.0.0.1] [--port 8080]\n"
    "         [--api-token TOKEN] [--max-connections 64] [--max-body-bytes 1048576] [--shutdown-grace-seconds 30]\n"
    "         [--threads N] [--device cpu|cuda] [--dtype float32|bfloat16|int8|int4|float16] [--max-batch-size N]\n"
    "         [--kv-cache-dtype auto|float32|bfloat16|float16] [--max-batch-tokens N] [--adapter-memory-budget BYTES]\n"
    "       lorascope-cli serve --demo [--demo-model t5|bart|bloom] [--demo-dir DIR] [options above]\n"
    "  LoRAX's HTTP API: POST / , /generate, /generate_stream (Server-Sent Events), /v1/completions (OpenAI;\n"
    "  `model` names an adapter or the base); GET /health, /info, /metrics (Prometheus), /v1/models.\n"
    "  `adapter_id` selects an adapter loaded with --adapter; an unknown one is answered 422.\n"
    "  --port 0 picks a free port. The first line on stdout is {\"listening\": \"http://HOST:PORT\", ...}.\n"
    "  --api-token (or the environment variable LORASCOPE_API_TOKEN): every route but /health then needs\n"
    "          'Authorization: Bearer TOKEN'. The token is never printed.\n"
    "  --max-connections: connections served at once; more are answered 429 (error_type \"overloaded\").\n"
    "  --max-body-bytes: larger request bodies are answered 413.\n"
    "  SIGINT/SIGTERM: new requests are answered 503, running ones finish (up to --shutdown-grace-seconds,\n"
    "          then they are cancelled); a second signal cancels them at once.\n";

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

}  // namespace

int cmd_serve(int argc, char** argv) {
    ExpandedArgs expanded = expand_demo_args(argc, argv);
    Args args(expanded.argc(), expanded.argv.data(), 2, {"help", "demo"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::vector<std::string> known = {"help", "demo", "host", "port", "api-token", "max-connections", "max-body-bytes",
                                      "shutdown-grace-seconds"};
    for (const auto& k : engine_option_names())
        if (k != "profile") known.push_back(k);
    for (const auto& k : demo_option_names()) known.push_back(k);
    args.allow_only(known);

    serve::ServeOptions options;
    options.host = args.get_or("host", "127.0.0.1");
    options.port = static_cast<int>(args.get_int("port", 8080));
    options.max_connections = static_cast<int>(args.get_int("max-connections", 64));
    options.max_body_bytes = args.get_int("max-body-bytes", options.max_body_bytes);
    if (const char* env = std::getenv("LORASCOPE_API_TOKEN")) options.api_token = env;
    if (auto token = args.get("api-token")) options.api_token = *token;
    const long long grace_s = args.get_int("shutdown-grace-seconds", 30);
    if (options.port < 0 || options.port > 65535) throw Error(ErrorKind::InvalidArgument, "--port must be in 0..65535");
    if (options.max_connections < 1 || options.max_connections > 4096)
        throw Error(ErrorKind::InvalidArgument, "--max-connections must be in 1..4096 (one thread each)");
    if (options.max_body_bytes < 1) throw Error(ErrorKind::InvalidArgument, "--max-body-bytes must be >= 1");
    if (grace_s < 0) throw Error(ErrorKind::InvalidArgument, "--shutdown-grace-seconds must be >= 0");

    const EngineOptions engine_options = engine_options_from(args);
    auto engine = create_engine_with_adapters(args, engine_options);
    auto tokenizer = load_tokenizer_if_present(engine_options.model_dir);

    serve::ServedModel model;
    model.model_id = model_id_for(engine_options.model_dir, expanded);
    for (const auto& a : engine->adapters()) model.adapters.push_back(a.name);
    model.generation_config = engine->generation_config();
    const ModelConfig& config = engine->model_config();
    model.encoder_decoder = config.is_encoder_decoder();
    model.decoder_start_token_id = decoder_start_token_id(config, model.generation_config);

    json adapters = json::array();
    for (const auto& a : engine->adapters())
        adapters.push_back({{"name", a.name}, {"rank", a.rank}, {"alpha", a.alpha}, {"targets", a.targets}});
    const json info = {
        {"model_id", model.model_id},
        {"model_sha", nullptr},
        {"model_dtype", "torch." + engine_options.dtype},
        {"model_device_type", engine_options.device.substr(0, engine_options.device.find(':'))},
        {"model_pipeline_tag", model.encoder_decoder ? "text2text-generation" : "text-generation"},
        {"max_concurrent_requests", options.max_connections},
        {"max_best_of", 1},
        {"max_stop_sequences", model.max_stop_sequences},
        {"max_input_length", engine_options.max_batch_tokens},
        {"max_total_tokens", engine_options.max_batch_tokens},
        {"waiting_served_ratio", 0},
        {"max_batch_total_tokens", engine_options.max_batch_tokens},
        {"max_waiting_tokens", 0},
        {"validation_workers", 0},
        {"eager_prefill", false},
        {"version", "lorascope " LORASCOPE_VERSION},
        {"sha", nullptr},
        {"docker_label", nullptr},
        {"request_logger_url", nullptr},
        {"model_family", to_string(config.family)},
        {"max_batch_size", engine_options.max_batch_size},
        {"adapters", adapters}};

    serve::LoraxServer server(*engine, model, tokenizer.get(), options, info);
    const int port = server.bind();
    // One JSON line on stdout, so that scripts and tests learn the port (--port 0) and what is served.
    std::printf("%s\n", json({{"listening", "http://" + options.host + ":" + std::to_string(port)},
                              {"model_id", model.model_id},
                              {"adapters", model.adapters},
                              {"authentication", !options.api_token.empty()}})
                            .dump()
                            .c_str());
    std::fflush(stdout);

    // SIGINT and SIGTERM: the handler only writes the signal's number to a pipe (async-signal-safe,
    // and right on whichever thread the kernel picks: OpenBLAS and OpenMP start threads before
    // main, so a signal mask set here would not cover them); a watcher thread does the shutdown.
    install_signal_pipe();
    std::atomic<bool> done{false};
    std::thread signal_thread([&] {
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
    });

    const bool ok = server.run();
    done = true;
    signal_thread.join();
    engine->cancel_all();
    std::fprintf(stderr, "lorascope-cli serve: stopped\n");
    if (!ok) throw Error(ErrorKind::Internal, options.host + ":" + std::to_string(port), "the listening socket failed");
    return 0;
}

}  // namespace lorascope::cli
