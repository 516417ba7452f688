#include "remote/remote_chat.h"

#include <QJsonArray>
#include <QJsonDocument>


namespace lorascope::ui::remote_detail {

namespace {

// The engine's JSON texts (messages, tools, variables) as Qt JSON values.
QJsonValue json_text(const std::string& text) {
    const QJsonDocument d = QJsonDocument::fromJson(QByteArray::fromStdString(text));
    return d.isArray() ? QJsonValue(d.array()) : QJsonValue(d.object());
}

}  // namespace

QJsonObject chatRequestBody(QJsonObject b, const Conversation& c, bool adapter_given, const QString& base_model_name) {
    b.remove(QStringLiteral("prompt"));
    b.insert(QStringLiteral("messages"), json_text(messages_to_json(c.messages)));
    if (!c.tools_json.empty()) b.insert(QStringLiteral("tools"), json_text(c.tools_json));
    if (!c.variables_json.empty()) b.insert(QStringLiteral("chat_template_kwargs"), json_text(c.variables_json));
    b.insert(QStringLiteral("logprobs"), true);   // chat's form: a flag (completions' is a count)
    if (!adapter_given) b.insert(QStringLiteral("model"), base_model_name);
    return b;
}

QJsonObject completionChunkOf(const QJsonObject& chat) {
    QJsonObject out = chat;
    QJsonArray choices;
    for (const auto& v : chat.value(QStringLiteral("choices")).toArray()) {
        QJsonObject choice = v.toObject();
        choice.insert(QStringLiteral("text"), choice.value(QStringLiteral("delta")).toObject().value(QStringLiteral("content")).toString());
        const QJsonArray content = choice.value(QStringLiteral("logprobs")).toObject().value(QStringLiteral("content")).toArray();
        QJsonArray tokens, lps;
        for (const auto& e : content) {
            tokens.append(e.toObject().value(QStringLiteral("token")));
            lps.append(e.toObject().value(QStringLiteral("logprob")));
        }
        choice.insert(QStringLiteral("logprobs"), QJsonObject{{QStringLiteral("tokens"), tokens}, {QStringLiteral("token_logprobs"), lps}});
        choices.append(choice);
    }
    out.insert(QStringLiteral("choices"), choices);
    return out;
}

}  // namespace lorascope::ui::remote_detail
