// The window's remote backend (ui/remote_backend.*) against `lorascope-cli serve --demo`: both
// dialects give the texts and logprobs of `lorascope-cli generate`; errors quote the server's
// error_type; Cancel closes the stream and the server cancels the request; connection errors are
// retried with backoff, HTTP errors (429) are not; more than six streams run at once; the API token
// never shows in a message or log.
#include <QtTest>

#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "cli_process.h"
#include "lorascope/error.h"
#include "remote/remote_backend.h"
#include "server_on_thread.h"
#include "wait_sink.h"
#include "serve_process.h"
#include "test_env.h"

using nlohmann::json;
using namespace lorascope;
using lorascope::test::WaitSink;
using lorascope::test::q;
using lorascope::test::Server;
using lorascope::test::json_lines;
using lorascope::test::run_generate;
using lorascope::ui::RemoteDialect;
using lorascope::ui::RemoteEndpoint;

namespace {

const std::string kToken = "tok-remote-5d1e";
std::string g_log;   // every Qt message of the test run, to look for the token in
void capture(QtMsgType, const QMessageLogContext&, const QString& m) { g_log += m.toStdString() + "\n"; }

// Whether `buffer` holds a whole HTTP request: its headers, and a POST's body of Content-Length bytes.
bool holds_whole_request(const QByteArray& buffer) {
    const int end = buffer.indexOf("\r\n\r\n");
    if (end < 0) return false;
    const int length = QByteArray(buffer.mid(buffer.toLower().indexOf("content-length:") + 15)).split('\r').at(0).trimmed().toInt();
    return !buffer.startsWith("POST") || buffer.size() >= end + 4 + length;
}

Request make_request(const std::string& prompt, const std::string& adapter, int64_t max_new_tokens) {
    Request r;
    r.prompt = prompt;
    r.adapter = adapter;
    r.params.max_new_tokens = max_new_tokens;
    r.params.do_sample = false;
    return r;
}


// The generate request a greedy remote request amounts to (LoRAX's request decides the decoding).
json greedy_generate(const std::string& id, const std::string& prompt, const std::string& adapter, int64_t n) {
    json r = {{"id", id}, {"prompt", prompt},
              {"params", {{"max_new_tokens", n}, {"do_sample", false}, {"top_k", 0}, {"top_p", 1.0},
                          {"typical_p", 1.0}, {"temperature", 1.0}, {"repetition_penalty", 1.0}, {"logprobs", true}}}};
    if (!adapter.empty()) r["adapter"] = adapter;
    return r;
}

double metric(const std::string& url, const std::string& name) {
    QNetworkAccessManager nam;
    QNetworkRequest req(QUrl(q(url + "/metrics")));
    req.setRawHeader("Authorization", QByteArray("Bearer ") + kToken.c_str());
    QNetworkReply* reply = nam.get(req);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    loop.exec();
    const QList<QByteArray> lines = reply->readAll().split('\n');
    reply->deleteLater();
    for (const auto& line : lines)
        if (line.startsWith(QByteArray(name.c_str()) + ' ')) return line.mid(int(name.size()) + 1).toDouble();
    return -1;
}

RemoteEndpoint endpoint(const std::string& url, RemoteDialect dialect, const std::string& token = kToken) {
    RemoteEndpoint e;
    e.url = QUrl(q(url));
    e.dialect = dialect;
    e.api_token = q(token);
    return e;
}

int free_port() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

// A test server that reads each connection's requests whole (holds_whole_request) and hands
// each to answer(); the two fakes below differ only in their answers.
class WholeRequestServer : public QTcpServer {
protected:
    virtual void answer(QTcpSocket* sock, const QByteArray& request) = 0;

    void incomingConnection(qintptr fd) override {
        auto* sock = new QTcpSocket(this);
        sock->setSocketDescriptor(fd);
        auto buffer = std::make_shared<QByteArray>();
        connect(sock, &QTcpSocket::readyRead, this, [this, sock, buffer] {
            *buffer += sock->readAll();
            if (!holds_whole_request(*buffer)) return;
            const QByteArray request = std::exchange(*buffer, QByteArray());
            answer(sock, request);
        });
    }
};

// A misbehaving LoRAX server on its own thread (the engine's creation blocks the caller): /info
// answers properly, /generate_stream as `mode` says.
class FakeServer : public WholeRequestServer {
public:
    enum Mode { MalformedEvent, DropMidStream, SilentAfterFirstToken, Unavailable };
    explicit FakeServer(Mode mode) : mode_(mode) {}
    Mode mode_;
    std::vector<QTcpSocket*> held_;

protected:
    void answer(QTcpSocket* sock, const QByteArray& request) override {
        if (request.startsWith("GET /info")) {
            const QByteArray body = R"({"model_id":"fake","adapters":[]})";
            sock->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) +
                        "\r\n\r\n" + body);
            return;
        }
        const QByteArray token = R"(data:{"token":{"id":5,"text":"a","logprob":-0.1,"special":false},"generated_text":null,"details":null})"
                                 "\n\n";
        if (mode_ == Unavailable) {
            const QByteArray body = R"({"error":"the server is shutting down","error_type":"unavailable"})";
            sock->write("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
                        QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
            return;
        }
        sock->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + token);
        if (mode_ == MalformedEvent) sock->write("data:{\"token\": {not json\n\n");
        if (mode_ == DropMidStream) {
            sock->flush();
            sock->disconnectFromHost();
        }
        if (mode_ == SilentAfterFirstToken) held_.push_back(sock);
    }
};

// Runs a FakeServer on a thread of its own for the scope.
struct FakeServerThread {
    QThread thread;
    FakeServer* server;
    quint16 port = 0;
    explicit FakeServerThread(FakeServer::Mode mode) : server(new FakeServer(mode)) {
        port = lorascope::test::listen_on_thread(server, thread);
    }
    ~FakeServerThread() {
        QMetaObject::invokeMethod(server, [this] { delete server; }, Qt::BlockingQueuedConnection);
        thread.quit();
        thread.wait();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

// The one request's finish against a fake server in `mode`.
FinishEvent fake_finish(FakeServer::Mode mode, int timeout_ms = 30000) {
    FakeServerThread fake(mode);
    RemoteEndpoint e = endpoint(fake.url(), RemoteDialect::Lorax);
    e.timeout_ms = timeout_ms;
    auto engine = ui::createRemoteEngine(e);
    auto sink = std::make_shared<WaitSink>();
    engine->submit(make_request("x", "", 8), sink);
    if (!sink->wait(60000)) {
        FinishEvent none;
        none.error = "no finish within 60 s";
        return none;
    }
    return sink->finish;
}

// Replays what a real vLLM 0.32 server answered (tests/data/vllm/, recorded by
// `scripts/check-vllm --record`): GET /v1/models gives models.json, POST /v1/completions gives
// `body` with `status` (an SSE stream, or an error's JSON).
class ReplayServer : public WholeRequestServer {
public:
    QByteArray models, body;
    int status = 200;

protected:
    void answer(QTcpSocket* sock, const QByteArray& request) override {
        const bool list = request.startsWith("GET /v1/models");
        const QByteArray& content = list ? models : body;
        const bool sse = !list && status == 200;
        sock->write("HTTP/1.1 " + QByteArray::number(list ? 200 : status) + " X\r\nContent-Type: " +
                    (sse ? QByteArray("text/event-stream; charset=utf-8") : QByteArray("application/json")) +
                    "\r\nContent-Length: " + QByteArray::number(content.size()) + "\r\nConnection: close\r\n\r\n" + content);
        sock->flush();
        sock->disconnectFromHost();
    }
};

QByteArray vllm_file(const std::string& name) {
    QFile f(q(lorascope::test::test_data() + "/vllm/" + name));
    if (!f.open(QIODevice::ReadOnly)) qFatal("missing test data %s", qPrintable(f.fileName()));
    return f.readAll();
}

// The finish of one request replayed from a recorded vLLM stream, with its streamed tokens.
std::shared_ptr<WaitSink> replay(const QByteArray& body, int status, const Request& request, std::string* model_id = nullptr,
                                 std::vector<AdapterInfo>* adapters = nullptr) {
    QThread thread;
    auto* server = new ReplayServer;
    server->models = vllm_file("models.json");
    server->body = body;
    server->status = status;
    const quint16 port = lorascope::test::listen_on_thread(server, thread);
    auto sink = std::make_shared<WaitSink>();
    {
        auto engine = ui::createRemoteEngine(endpoint("http://127.0.0.1:" + std::to_string(port), RemoteDialect::OpenAi));
        if (model_id) *model_id = engine->model_config().name_or_path;
        if (adapters) *adapters = engine->adapters();
        engine->submit(request, sink);
        if (!sink->wait(30000)) sink->finish.error = "no finish within 30 s";
    }
    QMetaObject::invokeMethod(server, [server] { delete server; }, Qt::BlockingQueuedConnection);
    thread.quit();
    thread.wait();
    return sink;
}

// The same request answered without streaming, as vLLM recorded it: the text and logprobs a
// replayed stream must add up to.
struct Whole {
    std::string text, finish_reason;
    std::vector<double> logprobs;
    int64_t prompt_tokens = 0, completion_tokens = 0;
};
Whole whole(const std::string& name) {
    const json j = json::parse(vllm_file(name).toStdString());
    const json& c = j.at("choices").at(0);
    return {c.at("text").get<std::string>(), c.at("finish_reason").get<std::string>(),
            c.at("logprobs").at("token_logprobs").get<std::vector<double>>(), j.at("usage").at("prompt_tokens").get<int64_t>(),
            j.at("usage").at("completion_tokens").get<int64_t>()};
}

void compare_with_whole(const WaitSink& sink, const Whole& want) {
    const FinishEvent& f = sink.finish;
    QCOMPARE(f.text, want.text);
    QCOMPARE(f.logprobs.size(), want.logprobs.size());
    for (size_t k = 0; k < want.logprobs.size(); ++k) QVERIFY(std::fabs(f.logprobs[k] - want.logprobs[k]) < 1e-6);
    QCOMPARE(sink.tokens.size(), want.logprobs.size());   // one token event per generated token
    std::string streamed;
    for (const auto& t : sink.tokens) streamed += t.text_delta;
    QCOMPARE(streamed, f.text);
    QCOMPARE(f.usage.prompt_tokens, want.prompt_tokens);
    QCOMPARE(f.usage.generated_tokens, want.completion_tokens);
}

}  // namespace

class TestRemoteBackend : public QObject {
    Q_OBJECT
    Server server_;

    void dialect_matches_generate(RemoteDialect dialect) {
        auto engine = ui::createRemoteEngine(endpoint(server_.url, dialect));
        QCOMPARE(engine->model_config().name_or_path, std::string("demo-t5"));
        QCOMPARE(engine->adapters().size(), size_t(3));
        const std::vector<std::pair<std::string, std::string>> cases = {
            {"", "queen wolf kite goat sun"}, {"upper", "queen wolf kite goat sun"}, {"reverse", "rain owl jam queen hat"}};
        std::vector<json> requests;
        std::vector<std::shared_ptr<WaitSink>> sinks;
        for (size_t i = 0; i < cases.size(); ++i) {
            requests.push_back(greedy_generate(std::to_string(i), cases[i].second, cases[i].first, 20));
            sinks.push_back(std::make_shared<WaitSink>());
            engine->submit(make_request(cases[i].second, cases[i].first, 20), sinks.back());   // all at once
        }
        const auto expected = run_generate(requests);
        QCOMPARE(expected.size(), cases.size());
        for (size_t i = 0; i < cases.size(); ++i) {
            QVERIFY(sinks[i]->wait(120000));
            const FinishEvent& f = sinks[i]->finish;
            const json& want = expected.at(std::to_string(i));
            QVERIFY2(f.reason == FinishReason::Eos, f.error.c_str());
            QCOMPARE(f.text, want.at("text").get<std::string>());
            const auto lps = want.at("logprobs").get<std::vector<double>>();
            QCOMPARE(f.logprobs.size(), lps.size());
            for (size_t k = 0; k < lps.size(); ++k) QVERIFY(std::fabs(f.logprobs[k] - lps[k]) < 1e-4);
            if (dialect == RemoteDialect::Lorax) QCOMPARE(f.token_ids, want.at("token_ids").get<std::vector<int64_t>>());
            QCOMPARE(f.usage.prompt_tokens, want.at("prompt_tokens").get<int64_t>());
            std::string streamed;
            for (const auto& t : sinks[i]->tokens) streamed += t.text_delta;
            QCOMPARE(streamed, f.text);   // the tokens stream the text the finish reports
        }
    }

private Q_SLOTS:
    void initTestCase() {
        qInstallMessageHandler(capture);
        QVERIFY(server_.start({"--api-token", q(kToken), "--max-connections", "8"}));
    }

    void lorax_dialect_matches_generate() { dialect_matches_generate(RemoteDialect::Lorax); }
    void openai_dialect_matches_generate() { dialect_matches_generate(RemoteDialect::OpenAi); }

    void errors_quote_the_error_type() {
        try {
            ui::createRemoteEngine(endpoint(server_.url, RemoteDialect::Lorax, "not-the-token"));
            QFAIL("a wrong token was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("401 (authentication)") != std::string::npos, e.what());
            QVERIFY(std::string(e.what()).find("not-the-token") == std::string::npos);
        }
        auto engine = ui::createRemoteEngine(endpoint(server_.url, RemoteDialect::Lorax));
        auto unknown = std::make_shared<WaitSink>();
        engine->submit(make_request("rain owl", "no-such-adapter", 8), unknown);
        QVERIFY(unknown->wait(30000));
        QCOMPARE(unknown->finish.reason, FinishReason::Error);
        QVERIFY2(unknown->finish.error.find("422 (validation)") != std::string::npos, unknown->finish.error.c_str());
        QVERIFY2(unknown->finish.error.find("no-such-adapter") != std::string::npos, unknown->finish.error.c_str());
        auto beams = std::make_shared<WaitSink>();
        Request r = make_request("rain owl", "", 8);
        r.params.num_beams = 3;
        engine->submit(r, beams);
        QVERIFY(beams->wait(30000));
        QVERIFY2(beams->finish.error.find("beam search") != std::string::npos, beams->finish.error.c_str());
    }

    void cancel_closes_the_stream_and_the_server_cancels() {
        auto engine = ui::createRemoteEngine(endpoint(server_.url, RemoteDialect::Lorax));
        const double before = metric(server_.url, "lorascope_client_disconnect_cancels");
        auto sink = std::make_shared<WaitSink>();
        Request r = make_request("queen wolf kite goat sun", "", 10000);
        r.params.ignore_eos = true;
        const RequestId id = engine->submit(r, sink);
        QVERIFY(sink->wait_first_token(60000));
        engine->cancel(id);
        QVERIFY(sink->wait(10000));
        QCOMPARE(sink->finish.reason, FinishReason::Cancelled);
        QVERIFY(sink->finish.token_ids.size() < 10000);
        QElapsedTimer t;
        t.start();
        while (metric(server_.url, "lorascope_requests_in_engine") != 0 && t.elapsed() < 10000) QTest::qWait(50);
        QCOMPARE(metric(server_.url, "lorascope_requests_in_engine"), 0.0);
        QCOMPARE(metric(server_.url, "lorascope_client_disconnect_cancels"), before + 1);
    }

    void more_than_six_streams_run_at_once() {
        // Qt Network opens six connections per server and manager: the seventh stream must not wait
        // for one of the first six to end (the server would never batch it with them).
        auto engine = ui::createRemoteEngine(endpoint(server_.url, RemoteDialect::Lorax));
        std::vector<std::shared_ptr<WaitSink>> sinks;
        for (int i = 0; i < 7; ++i) {
            sinks.push_back(std::make_shared<WaitSink>());
            Request r = make_request("queen wolf kite goat sun", "", 2000);
            r.params.ignore_eos = true;
            engine->submit(r, sinks.back());
        }
        for (auto& sink : sinks) QVERIFY(sink->wait_first_token(60000));
        int finished = 0;
        for (auto& sink : sinks) finished += sink->wait(0) ? 1 : 0;
        // All seven started while all seven ran. (No /metrics here: the seven streams and the
        // engine's kept-alive /info connection fill the server's eight.)
        QCOMPARE(finished, 0);
        engine->cancel_all();
        for (auto& sink : sinks) {
            QVERIFY(sink->wait(30000));
            QCOMPARE(sink->finish.reason, FinishReason::Cancelled);
        }
    }

    void connection_errors_are_retried_with_backoff() {
        const int port = free_port();
        const std::string url = "http://127.0.0.1:" + std::to_string(port);
        RemoteEndpoint nowhere = endpoint(url, RemoteDialect::Lorax);
        nowhere.connect_attempts = 3;
        QElapsedTimer t;
        t.start();
        try {
            ui::createRemoteEngine(nowhere);
            QFAIL("nothing listens there");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("after 3 attempt(s)") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find(url) != std::string::npos, e.what());
        }
        QVERIFY2(t.elapsed() >= 700, "no backoff between the attempts (250 + 500 ms)");

        // A server that goes away and comes back on its port: the request waits out the gap.
        Server late;
        QVERIFY(late.start({"--api-token", q(kToken), "--port", QString::number(port)}));
        RemoteEndpoint e = endpoint(late.url, RemoteDialect::Lorax);
        e.connect_attempts = 9;   // 250 ms doubling: about a minute in all, room for a restart
        auto engine = ui::createRemoteEngine(e);
        QCOMPARE(late.stop(), 0);
        auto sink = std::make_shared<WaitSink>();
        engine->submit(make_request("rain owl jam", "upper", 8), sink);
        QTest::qWait(300);   // at least one refused attempt
        Server again;
        QVERIFY(again.start({"--api-token", q(kToken), "--port", QString::number(port)}));
        QVERIFY(sink->wait(120000));
        QVERIFY2(sink->finish.reason == FinishReason::Eos, sink->finish.error.c_str());
        QCOMPARE(sink->finish.text, std::string("RAIN OWL JAM"));
    }

    void http_errors_are_not_retried() {
        Server one;
        QVERIFY(one.start({"--api-token", q(kToken), "--max-connections", "1"}));
        auto engine = ui::createRemoteEngine(endpoint(one.url, RemoteDialect::Lorax));
        auto hold = std::make_shared<WaitSink>();
        Request r = make_request("queen wolf kite goat sun", "", 10000);
        r.params.ignore_eos = true;
        const RequestId held = engine->submit(r, hold);
        QVERIFY(hold->wait_first_token(60000));
        auto refused = std::make_shared<WaitSink>();
        engine->submit(make_request("rain owl", "", 8), refused);
        QVERIFY(refused->wait(30000));
        QCOMPARE(refused->finish.reason, FinishReason::Error);
        QVERIFY2(refused->finish.error.find("429 (overloaded)") != std::string::npos, refused->finish.error.c_str());
        engine->cancel(held);
        QVERIFY(hold->wait(10000));
        QTest::qWait(200);
        // One refusal on the server: the 429 was not retried.
        QCOMPARE(metric(one.url, "lorascope_connections_refused"), 1.0);
    }

    void misbehaving_servers_give_named_errors() {
        const FinishEvent malformed = fake_finish(FakeServer::MalformedEvent);
        QCOMPARE(malformed.reason, FinishReason::Error);
        QVERIFY2(malformed.error.find("malformed server-sent event") != std::string::npos, malformed.error.c_str());
        QCOMPARE(malformed.token_ids, std::vector<int64_t>{5});   // what came before stays

        const FinishEvent dropped = fake_finish(FakeServer::DropMidStream);
        QCOMPARE(dropped.reason, FinishReason::Error);
        QVERIFY2(dropped.error.find("closed the stream before the request finished") != std::string::npos, dropped.error.c_str());

        QElapsedTimer t;
        t.start();
        const FinishEvent slow = fake_finish(FakeServer::SilentAfterFirstToken, 1500);
        QCOMPARE(slow.reason, FinishReason::Error);
        QVERIFY2(slow.error.find("no data for 1500 ms (timeout)") != std::string::npos, slow.error.c_str());
        QVERIFY(t.elapsed() >= 1400);   // Qt's transfer timer is coarse (up to 5% early)

        const FinishEvent unavailable = fake_finish(FakeServer::Unavailable);
        QCOMPARE(unavailable.reason, FinishReason::Error);
        QVERIFY2(unavailable.error.find("503 (unavailable)") != std::string::npos, unavailable.error.c_str());
    }

    // vLLM's own stream shapes (recorded from vLLM 0.32.0 with --stream-interval 3): events
    // that carry several tokens, a text delta that is not the tokens' concatenation, usage in an
    // event of its own after the finish, a stop string named by stop_reason.
    void openai_dialect_reads_vllm_streams() {
        Request r = make_request("queen wolf kite", "tiny-lora", 7);
        r.params.ignore_eos = true;
        std::string model_id;
        std::vector<AdapterInfo> adapters;
        const auto several = replay(vllm_file("stream-interval3-adapter.sse"), 200, r, &model_id, &adapters);
        QCOMPARE(model_id, std::string("tiny-llama"));
        QCOMPARE(adapters.size(), size_t(1));
        QCOMPARE(adapters.at(0).name, std::string("tiny-lora"));
        QVERIFY2(several->finish.reason == FinishReason::Length, several->finish.error.c_str());
        compare_with_whole(*several, whole("stream-interval3-adapter.json"));
        if (QTest::currentTestFailed()) return;
        QVERIFY(several->finish.alternatives.empty());   // none asked for: top_logprobs not read

        // Asked for alternatives (top_alternatives 1, sent as the recording's `logprobs: 1`): each
        // token's top_logprobs dict as vLLM wrote it, greedy: the chosen token alone, no token id.
        Request k1 = r;
        k1.params.top_alternatives = 1;
        const auto with_alternatives = replay(vllm_file("stream-interval3-adapter.sse"), 200, k1);
        const json top = json::parse(vllm_file("stream-interval3-adapter.json").toStdString())
                             .at("choices").at(0).at("logprobs").at("top_logprobs");
        const FinishEvent& fa = with_alternatives->finish;
        QCOMPARE(fa.alternatives.size(), top.size());
        for (size_t t = 0; t < top.size(); ++t) {
            QCOMPARE(fa.alternatives[t].size(), size_t(1));
            QCOMPARE(fa.alternatives[t][0].token_id, int64_t(-1));
            QCOMPARE(fa.alternatives[t][0].text, top[t].begin().key());
            QVERIFY(std::fabs(fa.alternatives[t][0].logprob - top[t].begin().value().get<double>()) < 1e-6);
            QCOMPARE(with_alternatives->tokens[t].alternatives.size(), size_t(1));
        }

        Request s = make_request("queen wolf kite", "", 24);
        s.params.ignore_eos = true;
        const auto stop = replay(vllm_file("stop.sse"), 200, s);
        QVERIFY2(stop->finish.reason == FinishReason::Stop, stop->finish.error.c_str());
        compare_with_whole(*stop, whole("stop.json"));
        if (QTest::currentTestFailed()) return;

        const auto unknown = replay(vllm_file("unknown-model.json"), vllm_file("unknown-model.status").trimmed().toInt(),
                                    make_request("queen wolf kite", "no-such-adapter", 4));
        QCOMPARE(unknown->finish.reason, FinishReason::Error);
        QVERIFY2(unknown->finish.error.find("HTTP 404 (NotFoundError)") != std::string::npos, unknown->finish.error.c_str());
        QVERIFY2(unknown->finish.error.find("no-such-adapter") != std::string::npos, unknown->finish.error.c_str());
    }

    void cleanupTestCase() {
        qInstallMessageHandler(nullptr);
        QVERIFY2(g_log.find(kToken) == std::string::npos, "the API token appeared in a log message");
        QCOMPARE(server_.stop(), 0);
    }
};

QTEST_GUILESS_MAIN(TestRemoteBackend)
#include "test_remote_backend.moc"
