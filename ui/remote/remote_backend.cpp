#include "remote/remote_backend.h"

#include <QCoreApplication>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QMutex>
#include <QThread>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <vector>

#include "lorascope/error.h"
#include "remote/remote_chat.h"
#include "remote/remote_link.h"

namespace lorascope::ui {

namespace {

QString openAiPrefix() { return QStringLiteral("openai+"); }

// Parameters the HTTP APIs cannot express: refused by name instead of silently dropped.
QString unsupported(const GenerationParams& p, RemoteDialect dialect) {
    if (p.num_beams && *p.num_beams > 1) return QStringLiteral("beam search (num_beams)");
    if (p.min_new_tokens) return QStringLiteral("min_new_tokens");
    if (p.no_repeat_ngram_size && *p.no_repeat_ngram_size > 0) return QStringLiteral("no_repeat_ngram_size");
    if (p.min_p) return QStringLiteral("min_p");
    if (p.length_penalty && *p.length_penalty != 1.0) return QStringLiteral("length_penalty");
    if (dialect == RemoteDialect::OpenAi && p.typical_p && *p.typical_p < 1.0) return QStringLiteral("typical_p");
    return {};
}

// LoRAX's merged_adapters; the seed (DARE's pruning) only where it is not the default, as LoRAX
// itself has no such field.
QJsonObject merged_adapters_json(const AdapterMerge& m) {
    QJsonArray ids, weights;
    for (const auto& id : m.ids) ids.append(QString::fromStdString(id));
    for (double w : m.weights) weights.append(w);
    QJsonObject o{{QStringLiteral("ids"), ids},
                  {QStringLiteral("weights"), weights},
                  {QStringLiteral("merge_strategy"), QLatin1String(to_string(m.strategy))},
                  {QStringLiteral("density"), m.density},
                  {QStringLiteral("majority_sign_method"), QLatin1String(to_string(m.majority_sign_method))}};
    if (m.seed != 0) o.insert(QStringLiteral("seed"), static_cast<qint64>(m.seed));
    return o;
}

QJsonArray stop_array(const GenerationParams& p) {
    QJsonArray a;
    if (p.stop)
        for (const auto& s : *p.stop) a.append(QString::fromStdString(s));
    return a;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool isRemoteLocation(const QString& location) {
    QString l = location.trimmed();
    if (l.startsWith(openAiPrefix())) l = l.mid(openAiPrefix().size());
    return l.startsWith(QLatin1String("http://")) || l.startsWith(QLatin1String("https://"));
}

RemoteEndpoint parseRemoteLocation(const QString& location) {
    RemoteEndpoint e;
    QString l = location.trimmed();
    if (l.startsWith(openAiPrefix())) {
        e.dialect = RemoteDialect::OpenAi;
        l = l.mid(openAiPrefix().size());
    }
    while (l.endsWith(QLatin1Char('/'))) l.chop(1);
    e.url = QUrl(l);
    return e;
}

QString remoteLocation(const QUrl& url, RemoteDialect dialect) {
    const QString base = url.toString(QUrl::RemoveUserInfo | QUrl::StripTrailingSlash);
    return dialect == RemoteDialect::OpenAi ? openAiPrefix() + base : base;
}

namespace {
QMutex g_credentials_mutex;
QHash<QString, QString>& credentials() {
    static QHash<QString, QString> tokens;
    return tokens;
}
}  // namespace

void RemoteCredentials::setToken(const QString& location, const QString& token) {
    QMutexLocker lock(&g_credentials_mutex);
    if (token.isEmpty()) credentials().remove(location.trimmed());
    else credentials().insert(location.trimmed(), token);
}

QString RemoteCredentials::token(const QString& location) {
    QMutexLocker lock(&g_credentials_mutex);
    const QString typed = credentials().value(location.trimmed());
    // The environment's, so that a token never has to be typed (nor be on a command line, in `ps`).
    return typed.isEmpty() ? qEnvironmentVariable("LORASCOPE_API_TOKEN") : typed;
}

// ---------------------------------------------------------------------------------------------

namespace {

using remote_detail::Link;

class RemoteEngine final : public Engine {
public:
    explicit RemoteEngine(RemoteEndpoint endpoint) {
        if (!endpoint.url.isValid() || endpoint.url.host().isEmpty())
            throw Error(ErrorKind::InvalidArgument, endpoint.url.toString().toStdString(), "not a server URL (http://host:port)");
        thread_.setObjectName(QStringLiteral("lorascope-remote"));
        link_ = new Link(endpoint, [this](RequestId id) {
            std::lock_guard<std::mutex> lock(mutex_);
            active_.erase(id);
            idle_.notify_all();
        });
        link_->moveToThread(&thread_);
        thread_.start();
        try {
            connect_to_server();
        } catch (...) {
            shutdown();
            throw;
        }
    }

    ~RemoteEngine() override { shutdown(); }

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        const RequestId id = ++next_id_;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            active_.insert(id);
        }
        auto s = std::make_shared<Link::Stream>();
        s->id = id;
        s->sink = sink;
        QString refused;
        if (!request.prompt && !request.conversation)
            refused = QStringLiteral("a remote server takes prompt text or a conversation, not token ids");
        else if (!request.decoder_prefix_ids.empty())
            refused = QStringLiteral("a forced decoder prefix (a fork of an encoder-decoder request) is not offered by "
                                     "the %1 API").arg(dialect_name());
        else if (request.target || !request.target_ids.empty())
            refused = QStringLiteral("scoring a target text is not offered by the %1 API").arg(dialect_name());
        else if (request.merge && (!lorax_dialect() || request.conversation))
            refused = QStringLiteral("merged adapters (a blend) are not offered by the %1 API")
                          .arg(request.conversation ? QStringLiteral("chat") : dialect_name());
        else if (request.params.prompt_logprobs.value_or(false) && (!lorax_dialect() || request.conversation))
            refused = QStringLiteral("prompt log-probabilities are asked of a LoRAX server only (decoder_input_details)");
        else if (const QString what = unsupported(request.params, link_->endpoint_.dialect); !what.isEmpty())
            refused = QStringLiteral("%1 is not offered by the %2 API").arg(what, dialect_name());
        if (refused.isEmpty()) {
            if (request.conversation) {   // the server's chat template lays it out (remote_chat.h)
                s->path = "/v1/chat/completions";
                s->chat = true;
                Request flat = request;
                flat.prompt = std::string();
                const bool lorax = link_->endpoint_.dialect == RemoteDialect::Lorax;
                s->body = QJsonDocument(remote_detail::chatRequestBody(openai_body(flat), *request.conversation,
                                                                       !request.adapter.empty(),
                                                                       lorax ? QString() : model_id_))
                              .toJson(QJsonDocument::Compact);
            } else if (lorax_dialect()) {
                // LoRAX streams no decoder_input_details: such a request is answered whole.
                s->whole = request.params.prompt_logprobs.value_or(false);
                s->path = s->whole ? "/generate" : "/generate_stream";
                s->body = QJsonDocument(lorax_body(request)).toJson(QJsonDocument::Compact);
            } else {
                s->path = "/v1/completions";
                s->top_alternatives = request.params.top_alternatives.value_or(0);
                s->body = QJsonDocument(openai_body(request)).toJson(QJsonDocument::Compact);
            }
        }
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link, s, refused, sink, id] {
            if (!refused.isEmpty()) link->start_failed(id, sink, refused);
            else link->start(s);
        }, Qt::QueuedConnection);
        return id;
    }

    void cancel(RequestId id) override {
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link, id] { link->cancel(id); }, Qt::QueuedConnection);
    }
    void cancel_all() override {
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link] { link->cancel_all(); }, Qt::QueuedConnection);
    }

    // The server loads its own adapters: a name added here is sent as adapter_id (OpenAI: model).
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        AdapterInfo info;
        info.name = name;
        info.path = dir;
        info.loaded = true;
        info.warnings.push_back("remote: the server resolves adapter '" + name + "' itself; the directory is not read");
        return remember(std::move(info));
    }
    // An adapter the server lists in /info, with the rank, alpha and targets it publishes there.
    void remember_published(const QJsonObject& a) {
        AdapterInfo info;
        info.name = a.value(QStringLiteral("name")).toString().toStdString();
        info.loaded = true;
        info.rank = a.value(QStringLiteral("rank")).toInteger();
        info.alpha = a.value(QStringLiteral("alpha")).toDouble();
        for (const auto& t : a.value(QStringLiteral("targets")).toArray()) info.targets.push_back(t.toString().toStdString());
        remember(std::move(info));
    }
    AdapterInfo remember(AdapterInfo info) {
        const std::string& name = info.name;
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& a : adapters_)
            if (a.name == name) return a;
        adapters_.push_back(info);
        return info;
    }
    void unload_adapter(const std::string& name) override {
        std::lock_guard<std::mutex> lock(mutex_);
        adapters_.erase(std::remove_if(adapters_.begin(), adapters_.end(), [&](const AdapterInfo& a) { return a.name == name; }),
                        adapters_.end());
    }
    std::vector<AdapterInfo> adapters() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return adapters_;
    }

    // A server publishes no engine steps; the inspector's per-step views stay empty for it.
    void set_stats_listener(std::function<void(const StepStats&)>) override {}
    void set_paused(bool) override {}   // a shared server is not ours to pause
    void step_once() override {}
    void wait_idle() override {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_.wait(lock, [&] { return active_.empty(); });
    }
    const ModelConfig& model_config() const override { return model_; }
    const GenerationConfig& generation_config() const override { return generation_; }

private:
    bool lorax_dialect() const { return link_->endpoint_.dialect == RemoteDialect::Lorax; }
    QString dialect_name() const { return link_->endpoint_.dialect == RemoteDialect::Lorax ? QStringLiteral("LoRAX") : QStringLiteral("OpenAI"); }

    void connect_to_server() {
        Link* link = link_;
        QByteArray body;
        std::exception_ptr failure;
        const QByteArray path = link->endpoint_.dialect == RemoteDialect::Lorax ? "/info" : "/v1/models";
        QMetaObject::invokeMethod(link, [&] {
            try {
                body = link->get_with_retries(path);
            } catch (...) {
                failure = std::current_exception();
            }
        }, Qt::BlockingQueuedConnection);
        if (failure) std::rethrow_exception(failure);
        const QJsonObject o = QJsonDocument::fromJson(body).object();
        model_.model_type = link->endpoint_.dialect == RemoteDialect::Lorax ? "remote LoRAX server" : "remote OpenAI server";
        if (link->endpoint_.dialect == RemoteDialect::Lorax) {
            model_id_ = o.value(QStringLiteral("model_id")).toString();
            const QString family = o.value(QStringLiteral("model_family")).toString();
            if (family == QLatin1String("bart")) {
                model_.family = Family::Bart;
                model_.arch = BartConfig{};
            } else if (family == QLatin1String("bloom")) {
                model_.family = Family::Bloom;
                model_.arch = BloomConfig{};
            }
            for (const auto& a : o.value(QStringLiteral("adapters")).toArray()) remember_published(a.toObject());
        } else {
            const QJsonArray models = o.value(QStringLiteral("data")).toArray();
            if (models.isEmpty()) throw Error(ErrorKind::Format, link->where(path), "the server lists no models");
            model_id_ = models.at(0).toObject().value(QStringLiteral("id")).toString();
            for (int i = 1; i < models.size(); ++i)
                load_adapter(models.at(i).toObject().value(QStringLiteral("id")).toString().toStdString(), {});
        }
        model_.name_or_path = model_id_.toStdString();
    }

    QJsonObject lorax_body(const Request& r) const {
        const GenerationParams& p = r.params;
        QJsonObject params{{QStringLiteral("details"), true}};
        if (r.merge) params.insert(QStringLiteral("merged_adapters"), merged_adapters_json(*r.merge));
        else if (!r.adapter.empty()) params.insert(QStringLiteral("adapter_id"), QString::fromStdString(r.adapter));
        // What the model weighed (issue 32), under LoRAX's names.
        if (p.top_alternatives && *p.top_alternatives > 0)
            params.insert(QStringLiteral("return_k_alternatives"), static_cast<qint64>(*p.top_alternatives));
        if (p.prompt_logprobs.value_or(false)) params.insert(QStringLiteral("decoder_input_details"), true);
        if (p.max_new_tokens) params.insert(QStringLiteral("max_new_tokens"), static_cast<qint64>(*p.max_new_tokens));
        // LoRAX samples whenever a sampling knob is set: send them only when sampling is asked for.
        if (p.do_sample.value_or(generation_.do_sample)) {
            params.insert(QStringLiteral("do_sample"), true);
            if (p.temperature) params.insert(QStringLiteral("temperature"), *p.temperature);
            if (p.top_k && *p.top_k > 0) params.insert(QStringLiteral("top_k"), static_cast<qint64>(*p.top_k));
            if (p.top_p && *p.top_p < 1) params.insert(QStringLiteral("top_p"), *p.top_p);
            if (p.typical_p && *p.typical_p < 1) params.insert(QStringLiteral("typical_p"), *p.typical_p);
        }
        if (p.repetition_penalty) params.insert(QStringLiteral("repetition_penalty"), *p.repetition_penalty);
        if (p.seed) params.insert(QStringLiteral("seed"), static_cast<qint64>(*p.seed));
        if (p.ignore_eos && *p.ignore_eos) params.insert(QStringLiteral("ignore_eos_token"), true);
        if (p.stop && !p.stop->empty()) params.insert(QStringLiteral("stop"), stop_array(p));
        return {{QStringLiteral("inputs"), QString::fromStdString(*r.prompt)}, {QStringLiteral("parameters"), params}};
    }

    QJsonObject openai_body(const Request& r) const {
        const GenerationParams& p = r.params;
        const bool sample = p.do_sample.value_or(generation_.do_sample);
        QJsonObject b{{QStringLiteral("model"), r.adapter.empty() ? model_id_ : QString::fromStdString(r.adapter)},
                      {QStringLiteral("prompt"), QString::fromStdString(*r.prompt)},
                      {QStringLiteral("stream"), true},
                      // Without it vLLM (and OpenAI) send no usage in a stream: no prompt token count.
                      {QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}}},
                      // The chosen token's logprob, and the k most likely beside it when asked
                      // (issue 32; vLLM takes up to 20, OpenAI up to 5).
                      {QStringLiteral("logprobs"), static_cast<qint64>(std::max<int64_t>(1, p.top_alternatives.value_or(0)))},
                      {QStringLiteral("max_tokens"), static_cast<qint64>(p.max_new_tokens.value_or(16))},
                      {QStringLiteral("temperature"), sample ? p.temperature.value_or(1.0) : 0.0}};
        if (sample && p.top_p) b.insert(QStringLiteral("top_p"), *p.top_p);
        if (sample && p.top_k && *p.top_k > 0) b.insert(QStringLiteral("top_k"), static_cast<qint64>(*p.top_k));
        if (p.repetition_penalty) b.insert(QStringLiteral("repetition_penalty"), *p.repetition_penalty);
        if (p.seed) b.insert(QStringLiteral("seed"), static_cast<qint64>(*p.seed));
        if (p.ignore_eos && *p.ignore_eos) b.insert(QStringLiteral("ignore_eos"), true);
        if (p.stop && !p.stop->empty()) b.insert(QStringLiteral("stop"), stop_array(p));
        return b;
    }

    void shutdown() {
        if (!link_) return;
        Link* link = link_;
        // The link and its QNetworkAccessManager are deleted on their own thread: deleteLater runs
        // as the thread finishes (QThread processes deferred deletes on exit).
        QMetaObject::invokeMethod(link, [link] {
            link->cancel_all();
            link->deleteLater();
        }, Qt::BlockingQueuedConnection);
        link_ = nullptr;
        thread_.quit();
        thread_.wait();
    }

    QThread thread_;
    Link* link_ = nullptr;
    std::atomic<RequestId> next_id_{0};
    mutable std::mutex mutex_;
    std::condition_variable idle_;
    std::set<RequestId> active_;
    std::vector<AdapterInfo> adapters_;
    ModelConfig model_;
    GenerationConfig generation_;
    QString model_id_;
};

}  // namespace

std::unique_ptr<Engine> createRemoteEngine(const RemoteEndpoint& endpoint) {
    if (!QCoreApplication::instance())
        throw Error(ErrorKind::Internal, "the remote backend needs a QCoreApplication (Qt Network)");
    return std::make_unique<RemoteEngine>(endpoint);
}

std::unique_ptr<Engine> createEngineForLocation(const EngineOptions& options,
                                                const std::function<std::unique_ptr<Engine>(const EngineOptions&)>& local) {
    const QString location = QString::fromStdString(options.model_dir);
    if (!isRemoteLocation(location)) return local(options);
    RemoteEndpoint endpoint = parseRemoteLocation(location);
    endpoint.api_token = RemoteCredentials::token(location);
    return createRemoteEngine(endpoint);
}

}  // namespace lorascope::ui
