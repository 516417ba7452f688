// serve's /metrics on request latency (issue 33): the end-to-end histogram, the recent
// percentiles and goodput against the --goodput-* targets are what the requests it was sent
// give, recomputed here by bench's definitions (lorascope/bench_report.h). A scripted engine
// answers each request with the timings its seed asks for, so every figure is known exactly.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>

#include "http_routes.h"
#include "lorascope/bench_report.h"
#include "lorascope/tokenizer.h"
#include "scripted_engine.h"
#include "serve_session.h"

using namespace lorascope;
using namespace lorascope::serve;

namespace {

// Request k's timings: TTFT 7k+3 ms, then 1.5k+0.5 ms per further token; its length is its
// max_new_tokens. k = 0 is an error (no tokens), k = 1 is cancelled after its tokens.
struct Timings {
    double ttft_ms, tpot_ms;
};
Timings timings_for(uint64_t k) { return {7.0 * double(k) + 3.0, 1.5 * double(k) + 0.5}; }

void answer(RequestId id, const Request& request, RequestSink& sink) {
    const uint64_t k = request.params.seed.value_or(0);
    const int64_t n = request.params.max_new_tokens.value_or(1);
    FinishEvent f;
    f.id = id;
    f.reason = k == 0 ? FinishReason::Error : k == 1 ? FinishReason::Cancelled : FinishReason::Length;
    if (k == 0) f.error = "scripted failure";
    for (int64_t i = 0; k > 0 && i < n; ++i) {
        TokenEvent t;
        t.id = id;
        t.token_id = 5;
        t.text_delta = " x";
        f.text += t.text_delta;
        f.token_ids.push_back(t.token_id);
        sink.on_token(t);
    }
    const Timings t = timings_for(k);
    f.usage.prompt_tokens = int64_t(request.input_ids.size());
    f.usage.generated_tokens = int64_t(f.token_ids.size());
    f.usage.queue_ms = 0.25 * double(k);
    f.usage.time_to_first_token_ms = t.ttft_ms;
    f.usage.total_ms = f.usage.generated_tokens > 0 ? t.ttft_ms + t.tpot_ms * double(f.usage.generated_tokens - 1) : 1.0;
    sink.on_finish(f);
}

// "name{labels} value" lines of the exposition, by "name{labels}".
std::map<std::string, double> samples(const std::string& text) {
    std::map<std::string, double> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t space = line.rfind(' ');
        out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return out;
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); }

// `name`'s histogram and recent percentiles in the samples `m` against the served requests' values:
// every one counted in the first bucket at or above it, the percentiles as bench computes them.
void check_latency(const std::map<std::string, double>& m, const std::string& name, const std::vector<double>& values_ms) {
    QCOMPARE(m.at(name + "_count"), double(values_ms.size()));
    double sum = 0;
    for (double v : values_ms) sum += v / 1000.0;
    QVERIFY2(same(m.at(name + "_sum"), sum), name.c_str());
    int buckets = 0;
    const std::string prefix = name + "_bucket{le=\"";
    for (const auto& [key, value] : m) {
        if (key.rfind(prefix, 0) != 0) continue;
        const std::string le = key.substr(prefix.size(), key.size() - prefix.size() - 2);
        const double bound = le == "+Inf" ? HUGE_VAL : std::stod(le);
        double at_or_below = 0;
        for (double v : values_ms) at_or_below += v / 1000.0 <= bound;
        QVERIFY2(value == at_or_below, key.c_str());
        ++buckets;
    }
    QCOMPARE(buckets, 36);   // 35 bounds and +Inf
    for (const auto& [label, p] : {std::pair<const char*, double>{"p50", 50}, {"p95", 95}, {"p99", 99}}) {
        const std::string key = name + "_recent{percentile=\"" + label + "\"}";
        QVERIFY2(same(m.at(key), percentile(values_ms, p) / 1000.0), key.c_str());
    }
}

}  // namespace

class TestServeLatencyMetrics : public QObject {
    Q_OBJECT
    std::unique_ptr<Tokenizer> tokenizer_ = load_tokenizer(std::string(LORASCOPE_TEST_DEMO_DIR) + "/t5");

private Q_SLOTS:
    void metricsAreWhatTheRequestsGive() {
        test::ScriptedEngine engine(answer);
        ServeOptions options;
        options.goodput.ttft_ms = 40;    // k <= 5
        options.goodput.tpot_ms = 11;    // k <= 7 (and any one-token request)
        ServeContext context(engine, test::scripted_served_model(64), tokenizer_.get(), options, nlohmann::json::object());
        const Routes routes(context);
        // Sent: k = 0..12, lengths 1..4 in turn.
        std::vector<double> e2e_ms, ttft_ms;
        int64_t good = 0, finished = 0;
        for (uint64_t k = 0; k <= 12; ++k) {
            const int64_t n = int64_t(k % 4) + 1;
            ParsedRequest r = parse_lorax_request({{"inputs", "sort: b a"}, {"parameters", {{"max_new_tokens", n}, {"seed", k}}}},
                                                  context.model, false);
            fit_to_budget(r, context.model, tokenizer_.get());
            Generation g(context, std::move(r), Dialect::Lorax, false, Clock::now());
            g.start([] {});
            QVERIFY(g.run_to_end(std::chrono::seconds(10)).finished);
            ++finished;
            if (k < 2) continue;   // failed, cancelled: not served
            const Timings t = timings_for(k);
            e2e_ms.push_back(t.ttft_ms + t.tpot_ms * double(n - 1));
            ttft_ms.push_back(t.ttft_ms);
            const double tpot = n > 1 ? t.tpot_ms : 0.0;
            good += t.ttft_ms <= options.goodput.ttft_ms && tpot <= options.goodput.tpot_ms;
        }
        QVERIFY(good > 0 && good < int64_t(e2e_ms.size()));

        const HeadDecision d = routes.on_head([] {
            RequestHead h;
            h.method(boost::beast::http::verb::get);
            h.target("/metrics");
            h.version(11);
            return h;
        }());
        QVERIFY(d.reply && d.reply->status == 200);
        const std::string& text = d.reply->body;
        QVERIFY(text.find("# TYPE lorascope_request_e2e_duration histogram") != std::string::npos);
        QVERIFY(text.find("# TYPE lorascope_request_ttft_duration histogram") != std::string::npos);
        const auto m = samples(text);
        check_latency(m, "lorascope_request_e2e_duration", e2e_ms);
        if (QTest::currentTestFailed()) return;
        check_latency(m, "lorascope_request_ttft_duration", ttft_ms);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(m.at("lorascope_goodput_requests"), double(good));
        QVERIFY(same(m.at("lorascope_goodput_ratio"), double(good) / double(finished)));
        QCOMPARE(m.at("lorascope_goodput_target_seconds{slo=\"ttft\"}"), 0.04);
        QCOMPARE(m.at("lorascope_goodput_target_seconds{slo=\"tpot\"}"), 0.011);
    }

    // The percentiles are over the latest kWindow requests only: older ones drop out.
    void recentPercentilesForgetOldRequests() {
        LatencyMetrics latency({});
        const Histogram e2e({1.0}), ttft({1.0});
        auto p50 = [&] {
            std::string out;
            latency.render(out, e2e, ttft);
            return samples(out).at("lorascope_request_e2e_duration_recent{percentile=\"p50\"}");
        };
        FinishEvent f;
        f.reason = FinishReason::Length;
        f.usage.generated_tokens = 1;
        f.usage.time_to_first_token_ms = f.usage.total_ms = 1000;   // slow requests, then as many fast ones
        for (size_t i = 0; i < LatencyMetrics::kWindow; ++i) QCOMPARE(latency.on_finished(f)->e2e_s, 1.0);
        QCOMPARE(p50(), 1.0);
        f.usage.time_to_first_token_ms = f.usage.total_ms = 10;
        for (size_t i = 0; i < LatencyMetrics::kWindow; ++i) QCOMPARE(latency.on_finished(f)->e2e_s, 0.01);
        QCOMPARE(p50(), 0.01);
        std::string out;
        latency.render(out, e2e, ttft);
        QCOMPARE(samples(out).at("lorascope_request_ttft_duration_recent{percentile=\"p50\"}"), 0.01);
        QCOMPARE(samples(out).at("lorascope_goodput_ratio"), 1.0);   // no targets: every served request is good
    }
};

QTEST_APPLESS_MAIN(TestServeLatencyMetrics)
#include "test_serve_latency_metrics.moc"
