// `lorascope-cli serve --demo` driven by LoRAX's own Python client (lorax-client) and by plain HTTP
// (tests/serve/serve_client.py): texts, token ids and logprobs equal `lorascope-cli generate` on the
// same requests, for /generate, /generate_stream and /v1/completions; bad input, many connections,
// clients that go away, the API token and a graceful SIGTERM each give a clear answer and leave the
// server serving.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cli_process.h"
#include "serve_process.h"
#include "test_env.h"

using nlohmann::json;

namespace {

using lorascope::test::q;
using lorascope::test::Server;
using lorascope::test::json_lines;
using lorascope::test::run_generate;
std::string python() { return lorascope::test::env_path("LORASCOPE_ORACLE_PYTHON"); }
std::string client_script() { return lorascope::test::env_path("LORASCOPE_SERVE_CLIENT"); }

constexpr int64_t kMaxConnections = 16;
constexpr int64_t kMaxBody = 65536;

using lorascope::test::PyResult;

PyResult run_client(const QStringList& args, int timeout_ms = 300000) {
    return lorascope::test::run_python(client_script(), args, timeout_ms);
}


// The request cases: LoRAX parameters, and the `lorascope-cli generate` params that serve maps
// them to (LoRAX's request decides sampling: absent knobs are off, not generation_config's).
json lorax_cases() {
    return json::array({
        {{"id", "base"}, {"inputs", "queen wolf kite goat sun"}, {"parameters", {{"max_new_tokens", 20}}}},
        {{"id", "upper"}, {"inputs", "queen wolf kite goat sun"},
         {"parameters", {{"adapter_id", "upper"}, {"max_new_tokens", 20}}}},
        {{"id", "reverse"}, {"inputs", "rain owl jam queen hat"}, {"decoder_input_details", true},
         {"parameters", {{"adapter_id", "reverse"}, {"max_new_tokens", 20}}}},
        {{"id", "stop"}, {"inputs", "queen wolf kite goat sun"},
         {"parameters", {{"adapter_id", "upper"}, {"max_new_tokens", 20}, {"stop", {"KITE"}}}}},
        {{"id", "length"}, {"inputs", "rain owl jam queen hat"},
         {"parameters", {{"adapter_id", "sort"}, {"max_new_tokens", 3}}}},
        {{"id", "ignore_eos"}, {"inputs", "rain owl jam"},
         {"parameters", {{"max_new_tokens", 12}, {"ignore_eos_token", true}}}},
        {{"id", "sample"}, {"inputs", "queen wolf kite goat sun"},
         {"parameters", {{"adapter_id", "reverse"}, {"max_new_tokens", 20}, {"do_sample", true}, {"temperature", 4.0},
                         {"top_k", 12}, {"seed", 4242}}}},
    });
}

json generate_request(const json& c) {
    const json& p = c.at("parameters");
    json params = {{"do_sample", p.value("do_sample", false)}, {"temperature", p.value("temperature", 1.0)},
                   {"top_k", p.value("top_k", 0)}, {"top_p", 1.0}, {"typical_p", 1.0}, {"repetition_penalty", 1.0},
                   {"logprobs", true}, {"ignore_eos", p.value("ignore_eos_token", false)}};
    for (const char* k : {"max_new_tokens", "seed", "stop"})
        if (p.contains(k)) params[k] = p[k];
    json r = {{"id", c.at("id")}, {"prompt", c.at("inputs")}, {"params", params}};
    if (p.contains("adapter_id")) r["adapter"] = p["adapter_id"];
    return r;
}


// Issue 32's fields on the BLOOM demo (decoder-only: prompt logprobs; plus-one and reverse share a
// rank, so they merge), served with --adapter-dir at the demo's bloom directory. `stream`: also
// through lorax-client's generate_stream; `raw_stream`: through plain HTTP (fields the client's
// generate_stream does not send); `refused`: answered 422 in LoRAX's error shape.
json inspection_cases() {
    const json merge_linear = {{"ids", {"plus-one", "reverse"}}, {"weights", {0.7, 0.3}}, {"merge_strategy", "linear"},
                               {"density", 1.0}};
    const json merge_dare = {{"ids", {"plus-one", "reverse"}}, {"weights", {0.6, 0.4}}, {"merge_strategy", "dare_ties"},
                             {"density", 0.5}, {"majority_sign_method", "frequency"}};
    return json::array({
        {{"id", "alternatives"}, {"inputs", "5 7 0 0 ="}, {"raw_stream", true},
         {"parameters", {{"adapter_id", "reverse"}, {"max_new_tokens", 8}, {"return_k_alternatives", 5}}}},
        {{"id", "prefill"}, {"inputs", "8 0 9 9 ="},
         {"parameters", {{"adapter_id", "plus-one"}, {"max_new_tokens", 8}, {"decoder_input_details", true}}}},
        {{"id", "merge_linear"}, {"inputs", "5 9 9 3 ="}, {"stream", true},
         {"parameters", {{"merged_adapters", merge_linear}, {"max_new_tokens", 8}}}},
        {{"id", "merge_dare_ties"}, {"inputs", "7 2 4 7 ="}, {"stream", true},
         {"parameters", {{"merged_adapters", merge_dare}, {"max_new_tokens", 8}, {"return_k_alternatives", 3}}}},
        {{"id", "best_of"}, {"inputs", "5 7 0 0 ="},
         {"parameters", {{"adapter_id", "shout"}, {"max_new_tokens", 8}, {"best_of", 3}, {"do_sample", true},
                         {"temperature", 3.0}, {"return_k_alternatives", 2}}}},
        {{"id", "truncate"}, {"inputs", "1 2 3 4 5 6 7 8 5 7 0 0 ="}, {"stream", true},
         {"parameters", {{"adapter_id", "reverse"}, {"max_new_tokens", 8}, {"truncate", 6}}}},
        {{"id", "local"}, {"inputs", "8 0 9 9 ="}, {"stream", true},
         {"parameters", {{"adapter_source", "local"}, {"adapter_id", "adapters/shout"}, {"max_new_tokens", 8}}}},
        {{"id", "outside_dotdot"}, {"inputs", "8 0 9 9 ="}, {"refused", true},
         {"parameters", {{"adapter_source", "local"}, {"adapter_id", "../t5/adapters/upper"}}}},
        {{"id", "outside_absolute"}, {"inputs", "8 0 9 9 ="}, {"refused", true},
         {"parameters", {{"adapter_source", "local"}, {"adapter_id", "/etc"}}}},
        // shout has r 4, plus-one r 8: PEFT refuses the merge, and so does serve before admitting it.
        {{"id", "merge_unequal_ranks"}, {"inputs", "8 0 9 9 ="}, {"refused", true}, {"says", "same r"},
         {"parameters", {{"merged_adapters", {{"ids", {"plus-one", "shout"}}, {"weights", {0.5, 0.5}},
                                                {"merge_strategy", "linear"}, {"density", 1.0}}}}}},
    });
}

// The `lorascope-cli generate` line a case's LoRAX parameters map to (`seed`: the one serve drew).
json inspection_request(const json& c, const json& seed = json()) {
    const json& p = c.at("parameters");
    json params = {{"do_sample", p.value("do_sample", false)}, {"temperature", p.value("temperature", 1.0)},
                   {"top_k", 0}, {"top_p", 1.0}, {"typical_p", 1.0}, {"repetition_penalty", 1.0},
                   {"logprobs", true}, {"ignore_eos", false}, {"max_new_tokens", p.at("max_new_tokens")}};
    if (p.contains("return_k_alternatives")) params["top_alternatives"] = p["return_k_alternatives"];
    if (p.value("decoder_input_details", false)) params["prompt_logprobs"] = true;
    for (const char* k : {"best_of", "truncate"})
        if (p.contains(k)) params[k] = p[k];
    if (!seed.is_null()) params["seed"] = seed;
    json r = {{"id", c.at("id")}, {"prompt", c.at("inputs")}, {"params", params}};
    if (p.contains("adapter_id")) r["adapter"] = p["adapter_id"];
    if (p.contains("adapter_source")) r["adapter_source"] = p["adapter_source"];
    if (p.contains("merged_adapters")) r["merged_adapters"] = p["merged_adapters"];
    return r;
}

bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b)); }

// A LoRAX token list (ids, logprobs, alternative_tokens) against generate's ids, logprobs and
// alternatives ([{token_id, logprob, text}] per token).
void compare_tokens(const json& tokens, const json& ids, const json& logprobs, const json& alternatives,
                    const std::string& where) {
    QVERIFY2(tokens.size() == ids.size(), (where + ": " + tokens.dump()).c_str());
    for (size_t i = 0; i < ids.size(); ++i) {
        QVERIFY2(tokens[i].at("id") == ids[i], (where + ": token " + std::to_string(i)).c_str());
        if (!logprobs.is_null()) QVERIFY2(close_to(tokens[i].at("logprob"), logprobs[i]), where.c_str());
        const json& got = tokens[i].contains("alternative_tokens") ? tokens[i]["alternative_tokens"] : json();
        if (alternatives.is_null()) {
            QVERIFY2(got.is_null(), (where + ": alternatives nobody asked for").c_str());
            continue;
        }
        QVERIFY2(got.size() == alternatives[i].size() && !got.empty(), (where + ": " + got.dump()).c_str());
        for (size_t k = 0; k < got.size(); ++k) {
            QVERIFY2(got[k].at("id") == alternatives[i][k].at("token_id"), where.c_str());
            QVERIFY2(got[k].at("text") == alternatives[i][k].at("text"), where.c_str());
            QVERIFY2(close_to(got[k].at("logprob"), alternatives[i][k].at("logprob")), where.c_str());
        }
    }
}

// decoder_input_details' prefill against generate's prompt_logprobs.
void compare_prefill(const json& prefill, const json& want, const std::string& where) {
    QVERIFY2(prefill.size() == want.size() && !want.empty(), (where + ": " + prefill.dump()).c_str());
    for (size_t i = 0; i < want.size(); ++i) {
        QVERIFY2(prefill[i].at("id") == want[i].at("token_id"), where.c_str());
        QVERIFY2(prefill[i].at("text") == want[i].at("text"), where.c_str());
        if (want[i].at("logprob").is_null()) QVERIFY2(prefill[i].at("logprob").is_null(), where.c_str());
        else QVERIFY2(close_to(prefill[i].at("logprob"), want[i].at("logprob")), where.c_str());
    }
}

std::string lorax_reason(const std::string& engine_reason) {
    if (engine_reason == "eos") return "eos_token";
    if (engine_reason == "stop") return "stop_sequence";
    return engine_reason;
}

}  // namespace

class TestServe : public QObject {
    Q_OBJECT
    Server server_;

    // One accepted inspection case: what serve answered on every mode against generate's line.
    static void check_inspection_case(const json& c, const json& want, const std::map<std::string, json>& served) {
        const std::string id = c.at("id");
        QVERIFY2(want.at("finish_reason") != "error", want.dump().c_str());
        const json alternatives = want.contains("alternatives") ? want["alternatives"] : json();
        const json& whole = served.at(id + "/generate");
        QVERIFY2(whole.at("generated_text") == want.at("text"), (id + ": " + whole.dump() + " vs " + want.dump()).c_str());
        const json& details = whole.at("details");
        QCOMPARE(details.at("prompt_tokens").get<int64_t>(), want.at("prompt_tokens").get<int64_t>());
        compare_tokens(details.at("tokens"), want.at("token_ids"), want.at("logprobs"), alternatives, id + "/generate");
        if (c.at("parameters").value("decoder_input_details", false))
            compare_prefill(details.at("prefill"), want.at("prompt_logprobs"), id + "/prefill");
        else
            QVERIFY2(details.at("prefill").empty(), (id + ": " + details.dump()).c_str());
        if (c.at("parameters").contains("best_of")) {
            const json& others = details.at("best_of_sequences");
            const json& sequences = want.at("sequences");
            QCOMPARE(others.size() + 1, sequences.size());
            for (size_t k = 0; k < others.size(); ++k) {
                const json& s = sequences[k + 1];
                QVERIFY2(others[k].at("generated_text") == s.at("text"), (id + ": " + others[k].dump()).c_str());
                compare_tokens(others[k].at("tokens"), s.at("token_ids"), s.at("logprobs"), s.at("alternatives"),
                               id + "/best_of_sequences");
            }
        }
        for (const char* mode : {"generate_stream", "raw_stream"}) {
            auto it = served.find(id + "/" + mode);
            if (it == served.end()) continue;
            QVERIFY2(it->second.at("generated_text") == want.at("text"), (id + "/" + mode + ": " + it->second.dump()).c_str());
            compare_tokens(it->second.at("tokens"), want.at("token_ids"), want.at("logprobs"),
                           std::string(mode) == "raw_stream" ? alternatives : json(), id + "/" + mode);
        }
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(lorascope::test::exists(python()),
                 ("no oracle python at " + python() + ": run scripts/setup-oracle").c_str());
        const PyResult r = run_client({"--version-check"}, 60000);
        QVERIFY2(r.err.find("No module named") == std::string::npos,
                 ("lorax-client is missing from the oracle venv (scripts/setup-oracle installs it): " + r.err).c_str());
        QVERIFY2(server_.start({"--max-connections", QString::number(kMaxConnections), "--max-body-bytes",
                                QString::number(kMaxBody)}),
                 ("the server did not start: " + server_.process.readAllStandardError().toStdString()).c_str());
        QVERIFY(server_.url.rfind("http://127.0.0.1:", 0) == 0);   // loopback unless --host says otherwise
        QCOMPARE(server_.hello.at("adapters").size(), size_t(3));
    }

    void lorax_client_matches_generate() {
        const json cases = lorax_cases();
        std::vector<json> requests;
        for (const auto& c : cases) requests.push_back(generate_request(c));
        const auto expected = run_generate(requests);
        QCOMPARE(expected.size(), cases.size());

        QTemporaryDir dir;
        const QString cases_path = dir.filePath("cases.json");
        QFile f(cases_path);
        f.open(QIODevice::WriteOnly);
        f.write(cases.dump().c_str());
        f.close();
        const PyResult r = run_client({q(server_.url), "parity", cases_path});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());

        std::map<std::string, int> modes_seen;
        for (const auto& line : json_lines(r.out)) {
            const std::string id = line.at("case"), mode = line.at("mode");
            const json& want = expected.at(id);
            const std::string where = id + "/" + mode;
            ++modes_seen[mode];
            const auto ids = want.at("token_ids").get<std::vector<int64_t>>();
            const auto lps = want.at("logprobs").get<std::vector<double>>();
            auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b)); };
            if (mode == "generate" || mode == "generate_stream") {
                QVERIFY2(line.at("generated_text") == want.at("text"), (where + ": " + line.dump()).c_str());
                QVERIFY2(line.at("finish_reason") == lorax_reason(want.at("finish_reason")), where.c_str());
                QCOMPARE(line.at("generated_tokens").get<int64_t>(), want.at("generated_tokens").get<int64_t>());
                QCOMPARE(line.at("prompt_tokens").get<int64_t>(), want.at("prompt_tokens").get<int64_t>());
                const json& tokens = line.at("tokens");
                QVERIFY2(tokens.size() == ids.size(), (where + ": " + tokens.dump()).c_str());
                for (size_t i = 0; i < ids.size(); ++i) {
                    QCOMPARE(tokens[i].at("id").get<int64_t>(), ids[i]);
                    QVERIFY2(close(tokens[i].at("logprob").get<double>(), lps[i]), where.c_str());
                }
                if (id == "sample") QCOMPARE(line.at("seed").get<int64_t>(), int64_t(4242));
                else QVERIFY2(line.at("seed").is_null(), (where + ": greedy requests report no seed").c_str());
                if (mode == "generate" && id == "reverse") {
                    QCOMPARE(line.at("prefill").size(), size_t(1));   // the decoder start token
                    QCOMPARE(line.at("prefill")[0].at("id").get<int64_t>(), int64_t(0));
                    QVERIFY(line.at("prefill")[0].at("logprob").is_null());
                }
                if (mode == "generate_stream") QCOMPARE(line.at("events").get<size_t>(), ids.size());
            } else {
                const std::string reason = want.at("finish_reason") == "length" ? "length" : "stop";
                QVERIFY2(line.at("text") == want.at("text"), (where + ": " + line.dump()).c_str());
                QVERIFY2(line.at("finish_reason") == reason, where.c_str());
                // vLLM's stop_reason: the stop string that matched (as generate's stop_sequence), else null.
                const json want_stop = want.at("finish_reason") == "stop" ? want.at("stop_sequence") : json();
                QVERIFY2(line.at("stop_reason") == want_stop, (where + ": " + line.dump()).c_str());
                QCOMPARE(line.at("usage").at("completion_tokens").get<int64_t>(), want.at("generated_tokens").get<int64_t>());
                QCOMPARE(line.at("usage").at("prompt_tokens").get<int64_t>(), want.at("prompt_tokens").get<int64_t>());
                const json& got = mode == "openai" ? line.at("logprobs").at("token_logprobs") : line.at("token_logprobs");
                QCOMPARE(got.size(), lps.size());
                for (size_t i = 0; i < lps.size(); ++i) QVERIFY2(close(got[i].get<double>(), lps[i]), where.c_str());
            }
        }
        QCOMPARE(modes_seen["generate"], int(cases.size()));
        QCOMPARE(modes_seen["generate_stream"], int(cases.size()));
        QCOMPARE(modes_seen["openai"], int(cases.size()) - 1);          // greedy cases only
        QCOMPARE(modes_seen["openai_stream"], int(cases.size()) - 1);
        // The stop case really stopped on its stop sequence (its text excludes it).
        QCOMPARE(expected.at("stop").at("finish_reason").get<std::string>(), std::string("stop"));
        QCOMPARE(expected.at("length").at("finish_reason").get<std::string>(), std::string("length"));
    }

    // Issue 32 through lorax-client: each field accepted and equal to `lorascope-cli generate`
    // with the same parameters; local adapters outside --adapter-dir refused in LoRAX's shape.
    void lorax_inspection_fields_match_generate() {
        const QString bloom_dir = QString(LORASCOPE_TEST_DEMO_DIR) + "/bloom";
        const QStringList model_args = {"--demo-model", "bloom", "--adapter-dir", bloom_dir};
        Server bloom;
        QVERIFY(bloom.start(model_args));
        const json cases = inspection_cases();
        QTemporaryDir dir;
        QFile f(dir.filePath("cases.json"));
        f.open(QIODevice::WriteOnly);
        f.write(cases.dump().c_str());
        f.close();
        const PyResult r = run_client({q(bloom.url), "inspect", f.fileName()});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        std::map<std::string, json> served;   // case/mode -> line
        for (const auto& line : json_lines(r.out)) served[line.at("case").get<std::string>() + "/" + line.at("mode").get<std::string>()] = line;

        std::vector<json> requests;
        for (const auto& c : cases) {
            if (c.value("refused", false)) continue;
            const json seed = c.at("id") == "best_of" ? served.at("best_of/generate").at("details").at("seed") : json();
            requests.push_back(inspection_request(c, seed));
        }
        const auto expected = run_generate(requests, QStringList{"--demo"} + model_args);
        QCOMPARE(expected.size(), requests.size());
        for (const auto& c : cases) {
            const std::string id = c.at("id");
            if (c.value("refused", false)) {
                const json& line = served.at(id + "/refused");
                QVERIFY2(line.at("body").at("error").get<std::string>().find("adapter") != std::string::npos, line.dump().c_str());
                QVERIFY2(line.at("client_error") == line.at("body").at("error"), line.dump().c_str());
                continue;
            }
            check_inspection_case(c, expected.at(id), served);
        }
        QCOMPARE(served.size(), size_t(15));   // 7 generate, 4 generate_stream, 1 raw_stream, 3 refused
        QCOMPARE(bloom.stop(), 0);
    }

    // Issue 32's alternatives in OpenAI's legacy form: /v1/completions' `logprobs: k` through
    // OpenAI's own client, whole and streamed, against `lorascope-cli generate` with
    // top_alternatives k. Per token, top_logprobs is vLLM's dict {text: logprob}: the chosen token
    // and the k most likely (the chosen one once when it is among them).
    void openai_client_logprobs_k_match_generate() {
        const json cases = json::array({
            {{"id", "k5"}, {"model", "reverse"}, {"prompt", "rain owl jam queen hat"}, {"max_tokens", 12}, {"logprobs", 5}},
            {{"id", "k20"}, {"model", "upper"}, {"prompt", "queen wolf kite goat sun"}, {"max_tokens", 10}, {"logprobs", 20}},
            {{"id", "k0"}, {"model", ""}, {"prompt", "rain owl jam"}, {"max_tokens", 6}, {"logprobs", 0}},
        });
        std::vector<json> requests;
        for (const auto& c : cases) {
            json params = {{"do_sample", false}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}, {"typical_p", 1.0},
                           {"repetition_penalty", 1.0}, {"logprobs", true}, {"ignore_eos", false},
                           {"max_new_tokens", c.at("max_tokens")}};
            if (c.at("logprobs") > 0) params["top_alternatives"] = c.at("logprobs");
            json r = {{"id", c.at("id")}, {"prompt", c.at("prompt")}, {"params", params}};
            if (c.at("model") != "") r["adapter"] = c.at("model");
            requests.push_back(r);
        }
        const auto expected = run_generate(requests);
        QTemporaryDir dir;
        QFile f(dir.filePath("cases.json"));
        f.open(QIODevice::WriteOnly);
        f.write(cases.dump().c_str());
        f.close();
        const PyResult r = run_client({q(server_.url), "completions", f.fileName()});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const auto lines = json_lines(r.out);
        QCOMPARE(lines.size(), 2 * cases.size() + 1);
        for (const auto& line : lines) {
            const std::string id = line.at("case"), where = id + "/" + line.at("mode").get<std::string>();
            if (id == "over_bound") {
                QVERIFY2(line.at("status") == 422 && line.at("body").at("error").get<std::string>().find("[0, 20]") !=
                                                         std::string::npos, line.dump().c_str());
                continue;
            }
            const json& want = expected.at(id);
            const int64_t k = std::find_if(cases.begin(), cases.end(), [&](const json& c) { return c.at("id") == id; })
                                  ->at("logprobs");
            const json& ids = want.at("token_ids");
            const json& tokens = line.at("tokens");
            const json& top = line.at("top_logprobs");
            QVERIFY2(line.at("text") == want.at("text"), (where + ": " + line.dump()).c_str());
            QVERIFY2(tokens.size() == ids.size() && top.size() == ids.size() && !ids.empty(), (where + ": " + line.dump()).c_str());
            std::string joined;
            for (size_t i = 0; i < ids.size(); ++i) {
                const std::string token = tokens[i];
                joined += token;
                const double lp = want.at("logprobs")[i];
                QVERIFY2(close_to(line.at("token_logprobs")[i], lp), where.c_str());
                // vLLM's entry built from generate's own numbers: the chosen token, then the k most
                // likely others (greedy: the chosen one is the first of them).
                json entry = {{token, lp}};
                if (k > 0) {
                    const json& alts = want.at("alternatives")[i];
                    QCOMPARE(alts.size(), size_t(k));
                    QVERIFY2(alts[0].at("token_id") == ids[i], where.c_str());
                    for (const auto& a : alts)
                        if (a.at("token_id") != ids[i] && !entry.contains(a.at("text").get<std::string>()))
                            entry[a.at("text").get<std::string>()] = a.at("logprob");
                }
                const std::string at = where + " token " + std::to_string(i) + ": " + top[i].dump() + " vs " + entry.dump();
                QVERIFY2(top[i].size() == entry.size(), at.c_str());
                for (const auto& [text, value] : entry.items())
                    QVERIFY2(top[i].contains(text) && close_to(top[i].at(text), value), at.c_str());
            }
            QVERIFY2(joined == want.at("text"), where.c_str());
        }
    }

    void bad_requests_get_clear_errors_and_the_server_lives_on() {
        const PyResult r = run_client({q(server_.url), "faults", QString::number(kMaxBody)});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const auto lines = json_lines(r.out);
        QCOMPARE(lines.size(), size_t(1));
        QVERIFY2(lines[0].at("unknown_adapter").get<std::string>().find("no-such-adapter") != std::string::npos,
                 lines[0].dump().c_str());
        QCOMPARE(server_.process.state(), QProcess::Running);
    }

    void connections_past_the_limit_are_refused_and_the_rest_complete() {
        const json request = {{"id", "crowd"},
                              {"prompt", "queen wolf kite goat sun"},
                              {"params", {{"max_new_tokens", 48}, {"ignore_eos", true}, {"do_sample", false}}}};
        const auto expected = run_generate({request});
        QVERIFY(expected.count("crowd"));
        const PyResult r = run_client({q(server_.url), "crowd", "200", q(expected.at("crowd").at("text"))});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const json summary = json_lines(r.out).at(0);
        const int64_t completed = summary.at("completed"), refused = summary.at("refused");
        QCOMPARE(completed + refused, int64_t(200));
        QVERIFY2(completed >= kMaxConnections, summary.dump().c_str());
        QVERIFY2(refused > 0, summary.dump().c_str());
        QVERIFY2(summary.at("connections_refused_metric").get<double>() >= double(refused), summary.dump().c_str());
    }

    void streams_whose_clients_leave_are_cancelled_in_the_engine() {
        const PyResult r = run_client({q(server_.url), "disconnect", "8"});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        QCOMPARE(json_lines(r.out).at(0).at("cancelled").get<double>(), 8.0);
    }

    void whole_requests_whose_clients_leave_are_cancelled_in_the_engine() {
        const PyResult r = run_client({q(server_.url), "disconnect-whole"});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const json summary = json_lines(r.out).at(0);
        QCOMPARE(summary.at("cancelled").get<double>(), 2.0);
        QCOMPARE(summary.at("neighbour_tokens").get<int64_t>(), int64_t(400));
    }

    void api_token_is_required_never_printed_and_sigterm_drains() {
        const std::string token = "sekrit-7f3a9c";
        Server guarded;
        // A grace far above the held stream's few seconds, so that a loaded machine cannot cut it.
        QVERIFY(guarded.start({"--api-token", q(token), "--shutdown-grace-seconds", "400"}));
        QCOMPARE(guarded.hello.at("authentication").get<bool>(), true);
        QProcess client;
        client.start(q(python()), {q(client_script()), q(guarded.url), "auth", q(token)});
        QVERIFY(client.waitForStarted(10000));
        std::string out;
        QElapsedTimer t;
        t.start();
        while (out.find("streaming") == std::string::npos && t.elapsed() < 120000 && client.state() == QProcess::Running) {
            client.waitForReadyRead(200);
            out += client.readAllStandardOutput().toStdString();
        }
        QVERIFY2(out.find("streaming") != std::string::npos,
                 (out + client.readAllStandardError().toStdString()).c_str());
        ::kill(static_cast<pid_t>(guarded.process.processId()), SIGTERM);
        QVERIFY(client.waitForFinished(400000));
        out += client.readAllStandardOutput().toStdString();
        QVERIFY2(client.exitCode() == 0, (out + client.readAllStandardError().toStdString()).c_str());
        QVERIFY2(out.find("\"drained\": true") != std::string::npos, out.c_str());
        QVERIFY(guarded.process.waitForFinished(60000));
        QCOMPARE(guarded.process.exitCode(), 0);
        const std::string printed = guarded.hello.dump() + guarded.process.readAllStandardOutput().toStdString() +
                                    guarded.process.readAllStandardError().toStdString();
        QVERIFY2(printed.find("SIGTERM") != std::string::npos, printed.c_str());
        QVERIFY2(printed.find(token) == std::string::npos, "the API token was printed");
    }

    void cleanupTestCase() {
        QCOMPARE(server_.process.state(), QProcess::Running);   // every fault above left it serving
        QCOMPARE(server_.stop(), 0);
    }
};

QTEST_APPLESS_MAIN(TestServe)
#include "test_serve.moc"
