#include "requests/prompt_source.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>

#include "lorascope/error.h"
#include "lorascope/params.h"

namespace lorascope::ui {

std::vector<PromptItem> promptsFromLines(const QString& text) {
    std::vector<PromptItem> out;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        const QString p = line.trimmed();
        if (!p.isEmpty()) out.push_back({QString(), p, std::nullopt, {}});
    }
    return out;
}

namespace {

[[noreturn]] void fail(const QString& where, const QString& message) {
    throw Error(ErrorKind::Format, where.toStdString(), message.toStdString());
}

// The engine's own parser, so that a prompt file is held to exactly the rules of the CLI.
GenerationParams paramsFromJson(const QJsonObject& o, const QString& where) {
    const QByteArray text = QJsonDocument(o).toJson(QJsonDocument::Compact);
    return parse_generation_params(text.toStdString(), where.toStdString());
}

}  // namespace

std::vector<PromptItem> promptsFromJsonLines(const QByteArray& data, const QString& path) {
    std::vector<PromptItem> out;
    const QList<QByteArray> lines = data.split('\n');
    for (int i = 0; i < lines.size(); ++i) {
        const QByteArray line = lines[i].trimmed();
        if (line.isEmpty()) continue;
        const QString where = QStringLiteral("%1:%2").arg(path).arg(i + 1);
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
        if (err.error != QJsonParseError::NoError) fail(where, QStringLiteral("malformed JSON: %1").arg(err.errorString()));
        if (!doc.isObject()) fail(where, QStringLiteral("each line must be a JSON object"));
        const QJsonObject o = doc.object();
        PromptItem item;
        const QJsonValue prompt = o.value(QStringLiteral("prompt"));
        if (!prompt.isString()) fail(where, QStringLiteral("\"prompt\" must be a string"));
        item.prompt = prompt.toString();
        const QJsonValue id = o.value(QStringLiteral("id"));
        if (id.isString()) item.client_id = id.toString();
        else if (id.isDouble()) item.client_id = QString::number(qint64(id.toDouble()));
        const QJsonValue adapter = o.value(QStringLiteral("adapter"));
        if (adapter.isString()) item.adapter = adapter.toString();
        else if (adapter.isNull()) item.adapter = QString();
        const QJsonValue params = o.value(QStringLiteral("params"));
        if (params.isObject()) item.overrides = paramsFromJson(params.toObject(), where);
        else if (!params.isUndefined() && !params.isNull()) fail(where, QStringLiteral("\"params\" must be an object"));
        out.push_back(std::move(item));
    }
    return out;
}

std::vector<PromptItem> promptsFromFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw Error(ErrorKind::NotFound, path.toStdString(), f.errorString().toStdString());
    const QByteArray data = f.readAll();
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("jsonl") || suffix == QLatin1String("json")) return promptsFromJsonLines(data, path);
    return promptsFromLines(QString::fromUtf8(data));
}

GenerationParams mergeParams(const GenerationParams& base, const GenerationParams& over) {
    GenerationParams p = base;
    auto take = [](auto& dst, const auto& src) { if (src) dst = src; };
    take(p.max_new_tokens, over.max_new_tokens);
    take(p.min_new_tokens, over.min_new_tokens);
    take(p.do_sample, over.do_sample);
    take(p.temperature, over.temperature);
    take(p.top_k, over.top_k);
    take(p.top_p, over.top_p);
    take(p.typical_p, over.typical_p);
    take(p.min_p, over.min_p);
    take(p.repetition_penalty, over.repetition_penalty);
    take(p.no_repeat_ngram_size, over.no_repeat_ngram_size);
    take(p.num_beams, over.num_beams);
    take(p.length_penalty, over.length_penalty);
    take(p.early_stopping, over.early_stopping);
    take(p.stop, over.stop);
    take(p.seed, over.seed);
    take(p.ignore_eos, over.ignore_eos);
    take(p.logprobs, over.logprobs);
    return p;
}

}  // namespace lorascope::ui
