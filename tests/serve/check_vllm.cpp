// The window's OpenAI dialect (ui/remote_backend.*) against a real vLLM server: run by
// scripts/check-vllm, which installs vLLM's CPU build, builds a tiny random Llama with a PEFT LoRA
// (scripts/py/vllm_tiny_model.py, which also records what HF + PEFT compute on it), and starts
// `vllm.entrypoints.openai.api_server --enable-lora`. Not part of CTest: installing vLLM takes
// gigabytes and minutes.
//
// Environment: LORASCOPE_VLLM_URL (http://127.0.0.1:PORT), LORASCOPE_VLLM_REFERENCE (reference.json),
// LORASCOPE_VLLM_ADAPTER (the served adapter's name), LORASCOPE_VLLM_MAX_NUM_SEQS (the server's
// --max-num-seqs, for the metrics check).
#include <QtTest>

#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>

#include <nlohmann/json.hpp>

#include <cmath>
#include <condition_variable>
#include <mutex>

#include "lorascope/error.h"
#include "remote/remote_backend.h"
#include "wait_sink.h"
#include "remote/server_metrics.h"

using nlohmann::json;
using namespace lorascope;
using lorascope::test::WaitSink;
using lorascope::ui::RemoteDialect;
using lorascope::ui::RemoteEndpoint;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }
std::string env(const char* name) { return qEnvironmentVariable(name).toStdString(); }

Request greedy(const std::string& prompt, const std::string& adapter, int64_t n) {
    Request r;
    r.prompt = prompt;
    r.adapter = adapter;
    r.params.max_new_tokens = n;
    r.params.do_sample = false;
    r.params.ignore_eos = true;   // HF's reference decodes exactly n tokens
    return r;
}

QByteArray http(const std::string& url, const QByteArray& post_body = {}, int* status = nullptr) {
    QNetworkAccessManager nam;
    QNetworkRequest req{QUrl(q(url))};
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    QNetworkReply* reply = post_body.isEmpty() ? nam.get(req) : nam.post(req, post_body);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    loop.exec();
    if (status) *status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QByteArray body = reply->readAll();
    reply->deleteLater();
    return body;
}

// Prometheus text: the samples of `name` (any labels), each with its label text and value.
std::vector<std::pair<std::string, double>> samples(const QByteArray& text, const std::string& name) {
    std::vector<std::pair<std::string, double>> out;
    for (const QByteArray& line : text.split('\n')) {
        if (!line.startsWith(QByteArray::fromStdString(name))) continue;
        const QByteArray rest = line.mid(int(name.size()));
        if (!rest.startsWith('{') && !rest.startsWith(' ')) continue;   // a longer name
        const int space = line.lastIndexOf(' ');
        out.emplace_back(line.left(space).toStdString(), line.mid(space + 1).toDouble());
    }
    return out;
}

// The one sample of `name` whose labels contain `label` ("" for any), or NAN.
double sample(const QByteArray& text, const std::string& name, const std::string& label = "") {
    for (const auto& [labels, value] : samples(text, name))
        if (label.empty() || labels.find(label) != std::string::npos) return value;
    return NAN;
}

}  // namespace

class CheckVllm : public QObject {
    Q_OBJECT
    std::string url_, adapter_;
    json reference_;
    int max_num_seqs_ = 4;

    RemoteEndpoint endpoint() const {
        RemoteEndpoint e;
        e.url = QUrl(q(url_));
        e.dialect = RemoteDialect::OpenAi;
        return e;
    }
    QByteArray metrics() const { return http(url_ + "/metrics"); }

private Q_SLOTS:
    void initTestCase() {
        url_ = env("LORASCOPE_VLLM_URL");
        adapter_ = env("LORASCOPE_VLLM_ADAPTER");
        QVERIFY2(!url_.empty() && !adapter_.empty(), "set LORASCOPE_VLLM_URL and LORASCOPE_VLLM_ADAPTER (scripts/check-vllm does)");
        QFile f(q(env("LORASCOPE_VLLM_REFERENCE")));
        QVERIFY2(f.open(QIODevice::ReadOnly), "LORASCOPE_VLLM_REFERENCE: no reference.json");
        reference_ = json::parse(f.readAll().toStdString());
        if (const std::string n = env("LORASCOPE_VLLM_MAX_NUM_SEQS"); !n.empty()) max_num_seqs_ = std::stoi(n);
    }

    void connects_and_lists_the_adapter() {
        auto engine = ui::createRemoteEngine(endpoint());
        QCOMPARE(engine->model_config().model_type, std::string("remote OpenAI server"));
        QVERIFY(!engine->model_config().name_or_path.empty());
        QCOMPARE(engine->adapters().size(), size_t(1));
        QCOMPARE(engine->adapters().at(0).name, adapter_);
    }

    // Base and adapter requests at once, streamed with logprobs: the texts vLLM itself answers
    // without streaming, and the chosen tokens' log-probabilities HF + PEFT compute.
    void base_and_adapter_stream_what_hf_computes() {
        auto engine = ui::createRemoteEngine(endpoint());
        const std::string base_id = engine->model_config().name_or_path;
        const int64_t n = reference_.at("new_tokens").get<int64_t>();
        const auto& cases = reference_.at("cases");
        std::vector<std::shared_ptr<WaitSink>> sinks;
        for (const auto& c : cases) {
            sinks.push_back(std::make_shared<WaitSink>());
            engine->submit(greedy(c.at("prompt").get<std::string>(), c.at("adapter").get<std::string>(), n), sinks.back());
        }
        std::map<std::string, std::string> text_by_case;
        for (size_t i = 0; i < cases.size(); ++i) {
            const json& c = cases[i];
            const std::string what = (c.at("adapter").get<std::string>().empty() ? "base" : c.at("adapter").get<std::string>()) +
                                     " on '" + c.at("prompt").get<std::string>() + "'";
            QVERIFY2(sinks[i]->wait(120000), what.c_str());
            const FinishEvent& f = sinks[i]->finish;
            QVERIFY2(f.reason == FinishReason::Length, (what + ": " + f.error).c_str());
            const auto want_lps = c.at("logprobs").get<std::vector<double>>();
            QCOMPARE(f.logprobs.size(), want_lps.size());
            QCOMPARE(sinks[i]->tokens.size(), want_lps.size());
            for (size_t k = 0; k < want_lps.size(); ++k)
                QVERIFY2(std::fabs(f.logprobs[k] - want_lps[k]) < 1e-3,
                         (what + ": token " + std::to_string(k) + " logprob " + std::to_string(f.logprobs[k]) + " vs HF " +
                          std::to_string(want_lps[k])).c_str());
            QCOMPARE(sinks[i]->streamed(), f.text);   // the tokens stream the text the finish reports
            QCOMPARE(f.text, c.at("text").get<std::string>());
            QCOMPARE(f.usage.prompt_tokens, c.at("prompt_tokens").get<int64_t>());
            QCOMPARE(f.usage.generated_tokens, n);

            // vLLM's own non-streamed answer to the same request.
            const std::string model = c.at("adapter").get<std::string>().empty() ? base_id : c.at("adapter").get<std::string>();
            const json body = {{"model", model}, {"prompt", c.at("prompt")}, {"max_tokens", n}, {"temperature", 0},
                               {"logprobs", 1}, {"ignore_eos", true}};
            int status = 0;
            const json whole = json::parse(http(url_ + "/v1/completions", QByteArray::fromStdString(body.dump()), &status).toStdString());
            QCOMPARE(status, 200);
            QCOMPARE(f.text, whole.at("choices").at(0).at("text").get<std::string>());
            text_by_case[c.at("adapter").get<std::string>() + "|" + c.at("prompt").get<std::string>()] = f.text;
        }
        for (const auto& c : cases)
            if (c.at("adapter").get<std::string>().empty()) {
                const std::string p = c.at("prompt").get<std::string>();
                QVERIFY2(text_by_case.at("|" + p) != text_by_case.at(adapter_ + "|" + p), "the adapter changed nothing");
            }
    }

    void stop_string_ends_the_request() {
        const json& stop = reference_.at("stop");
        auto engine = ui::createRemoteEngine(endpoint());
        auto sink = std::make_shared<WaitSink>();
        Request r = greedy(stop.at("prompt").get<std::string>(), "", reference_.at("new_tokens").get<int64_t>());
        r.params.stop = std::vector<std::string>{stop.at("stop").get<std::string>()};
        engine->submit(r, sink);
        QVERIFY(sink->wait(60000));
        QVERIFY2(sink->finish.reason == FinishReason::Stop, sink->finish.error.c_str());
        QCOMPARE(sink->finish.text, stop.at("text").get<std::string>());
        QCOMPARE(sink->streamed(), sink->finish.text);
    }

    void unknown_adapter_is_a_named_error() {
        auto engine = ui::createRemoteEngine(endpoint());
        auto sink = std::make_shared<WaitSink>();
        engine->submit(greedy("queen wolf", "no-such-adapter", 8), sink);
        QVERIFY(sink->wait(30000));
        QCOMPARE(sink->finish.reason, FinishReason::Error);
        QVERIFY2(sink->finish.error.find("HTTP 404 (NotFoundError)") != std::string::npos, sink->finish.error.c_str());
        QVERIFY2(sink->finish.error.find("no-such-adapter") != std::string::npos, sink->finish.error.c_str());
    }

    // Cancel closes the stream; vLLM aborts the request: it leaves the running batch within 3 s
    // (decoding all 4000 tokens takes about 9 s here), is not counted as finished by length, and
    // generated far fewer tokens than it was allowed.
    void cancel_closes_the_stream_and_vllm_aborts() {
        const int64_t n = 4000;
        auto engine = ui::createRemoteEngine(endpoint());
        const QByteArray before = metrics();
        const double generated_before = sample(before, "vllm:generation_tokens_total");
        const double length_before = sample(before, "vllm:request_success_total", "finished_reason=\"length\"");
        QVERIFY2(!std::isnan(generated_before) && !std::isnan(length_before), before.left(400).constData());
        auto sink = std::make_shared<WaitSink>();
        const RequestId id = engine->submit(greedy("queen wolf kite", adapter_, n), sink);
        QVERIFY(sink->wait_first_token(60000));
        engine->cancel(id);
        QVERIFY(sink->wait(10000));
        QCOMPARE(sink->finish.reason, FinishReason::Cancelled);
        QVERIFY(sink->finish.logprobs.size() < size_t(n));
        QElapsedTimer t;
        t.start();
        QByteArray after = metrics();
        while (sample(after, "vllm:num_requests_running") != 0 && t.elapsed() < 3000) {
            QTest::qWait(50);
            after = metrics();
        }
        QCOMPARE(sample(after, "vllm:num_requests_running"), 0.0);
        QTest::qWait(500);
        after = metrics();
        const double generated = sample(after, "vllm:generation_tokens_total") - generated_before;
        qInfo("cancelled after %zu streamed tokens; the server generated %.0f of %lld allowed",
              sink->finish.logprobs.size(), generated, static_cast<long long>(n));
        QVERIFY2(generated < n / 2, "the server went on decoding after the cancel");
        QCOMPARE(sample(after, "vllm:request_success_total", "finished_reason=\"length\""), length_before);
    }

    // What an inspector can read from vLLM's /metrics while streams queue up: the names and
    // labels as this server writes them (printed), and values that move with the load.
    void metrics_show_running_and_waiting_requests() {
        auto engine = ui::createRemoteEngine(endpoint());
        const int count = 3 * max_num_seqs_;
        std::vector<std::shared_ptr<WaitSink>> sinks;
        for (int i = 0; i < count; ++i) {
            sinks.push_back(std::make_shared<WaitSink>());
            engine->submit(greedy("rain owl jam hat", i % 2 ? adapter_ : "", 1500), sinks.back());
        }
        double running = 0, waiting = 0, kv = 0;
        QByteArray busiest;
        QElapsedTimer t;
        t.start();
        for (;;) {
            const QByteArray m = metrics();
            const double r = sample(m, "vllm:num_requests_running"), w = sample(m, "vllm:num_requests_waiting");
            if (r + w > running + waiting) busiest = m;
            running = std::max(running, r);
            waiting = std::max(waiting, w);
            kv = std::max(kv, sample(m, "vllm:kv_cache_usage_perc"));
            bool all_done = true;
            for (auto& s : sinks) all_done = all_done && s->wait(0);
            if (all_done || t.elapsed() > 300000) break;
            QTest::qWait(100);
        }
        for (auto& s : sinks) {
            QVERIFY(s->wait(1000));
            QVERIFY2(s->finish.reason == FinishReason::Length, s->finish.error.c_str());
        }
        for (const char* name : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                                 "vllm:lora_requests_info"})
            for (const auto& [labels, value] : samples(busiest, name)) qInfo("metric %s %g", labels.c_str(), value);
        qInfo("peaks over %d streams (--max-num-seqs %d): running %g, waiting %g, kv_cache_usage_perc %g", count,
              max_num_seqs_, running, waiting, kv);
        QVERIFY(running >= 2 && running <= max_num_seqs_);
        QVERIFY(waiting >= 1);
        QVERIFY(kv > 0 && kv <= 1);
        // The batching inspector's reading of the same text (ui/server_metrics.*): vLLM recognised,
        // and the values it shows are the server's.
        const ui::ServerReading reading = ui::readServerMetrics(ui::prometheus::parse(busiest.toStdString()));
        QVERIFY(reading.flavor == ui::ServerFlavor::Vllm);
        QVERIFY(reading.batch_size && *reading.batch_size == sample(busiest, "vllm:num_requests_running"));
        QVERIFY(reading.queue_length && *reading.queue_length == sample(busiest, "vllm:num_requests_waiting"));
        QVERIFY(reading.kv_usage && *reading.kv_usage > 0 && *reading.kv_usage <= 1);
        QVERIFY(reading.generated_tokens && *reading.generated_tokens > 0);
        qInfo("inspector reading: batch %g, queue %g, kv %g, generated tokens %g", *reading.batch_size,
              *reading.queue_length, *reading.kv_usage, *reading.generated_tokens);
    }
};

QTEST_GUILESS_MAIN(CheckVllm)
#include "check_vllm.moc"
