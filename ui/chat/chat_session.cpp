#include "chat/chat_session.h"

#include "engine_link/engine_bridge.h"

namespace lorascope::ui {

ChatSession::ChatSession(EngineBridge* bridge, QObject* parent) : QObject(parent), bridge_(bridge) {
    connect(bridge_, &EngineBridge::drained, this, &ChatSession::on_drained);
    setTargets({QString()});
}

ChatSession::~ChatSession() = default;

void ChatSession::setTargets(const QStringList& targets) {
    cancel();
    targets_ = targets;
    transcripts_.clear();
    target_of_.clear();
    for (const auto& t : targets_) transcripts_[t] = std::make_unique<ChatTranscriptModel>();
}

ChatTranscriptModel* ChatSession::transcript(const QString& target) const {
    auto it = transcripts_.find(target);
    return it == transcripts_.end() ? nullptr : it->second.get();
}

bool ChatSession::busy() const {
    for (const auto& [target, model] : transcripts_)
        if (model->streaming()) return true;
    return false;
}

bool ChatSession::check_can_send(const QString& text) {
    QString why;
    if (!bridge_->hasEngine()) why = tr("Load a model first.");
    else if (targets_.isEmpty()) why = tr("Choose the base model or an adapter to answer.");
    else if (text.trimmed().isEmpty()) why = tr("Write a message first.");
    else if (busy()) why = tr("Answers are still streaming: wait, or stop them.");
    if (why.isEmpty()) return true;
    Q_EMIT failed(why);
    return false;
}

bool ChatSession::send(const QString& text) {
    if (!check_can_send(text)) return false;
    for (const auto& t : targets_) transcripts_[t]->addUserTurn(text);
    submit_all();
    return true;
}

bool ChatSession::resendLast(const QString& text) {
    if (!check_can_send(text)) return false;
    for (const auto& t : targets_)
        if (!transcripts_[t]->replaceLastUserTurn(text)) transcripts_[t]->addUserTurn(text);
    submit_all();
    return true;
}

Conversation ChatSession::conversation(const QString& target) const {
    Conversation c;
    if (!system_prompt_.trimmed().isEmpty()) c.messages.push_back({"system", system_prompt_.toStdString(), {}});
    if (const auto* model = transcript(target))
        for (auto& m : model->messages()) c.messages.push_back(std::move(m));
    return c;
}

void ChatSession::submit_all() {
    // One step for every target: the answers decode side by side, as the comparison's columns do.
    bridge_->holdSubmissions(true);
    for (const auto& t : targets_) {
        Request r;
        r.conversation = conversation(t);
        r.adapter = t.toStdString();
        r.params.max_new_tokens = max_new_tokens_;
        const Ticket ticket = bridge_->submit(std::move(r));
        if (ticket == 0) continue;   // the bridge said why (errorOccurred)
        target_of_[ticket] = t;
        transcripts_[t]->beginAnswer(ticket);
    }
    bridge_->holdSubmissions(false);
    Q_EMIT busyChanged(busy());
}

void ChatSession::cancel() {
    for (const auto& [ticket, target] : target_of_)
        if (bridge_->isActive(ticket)) bridge_->cancel(ticket);
}

void ChatSession::clear() {
    setTargets(targets_);
    Q_EMIT busyChanged(false);
}

void ChatSession::on_drained(const DrainBatch& batch) {
    bool touched = false;
    for (const auto& t : batch.tokens) {
        auto it = target_of_.find(t.ticket);
        if (it != target_of_.end() && transcripts_.count(it->second)) touched |= transcripts_[it->second]->appendDelta(t.ticket, t.token.text);
    }
    for (const auto& f : batch.finishes) {
        auto it = target_of_.find(f.ticket);
        if (it == target_of_.end()) continue;
        if (transcripts_.count(it->second)) touched |= transcripts_[it->second]->finishAnswer(f.ticket, f.event);
        target_of_.erase(it);
    }
    if (touched) Q_EMIT busyChanged(busy());
}

QString ChatSession::renderedPrompt(const QString& target, QString* error) const {
    const ModelChatTemplates* templates = bridge_->chatTemplates();
    if (!templates) {
        *error = bridge_->hasEngine() ? tr("This model has no chat template here (a remote server renders its own).")
                                      : tr("No model loaded.");
        return {};
    }
    try {
        ChatRenderOptions options;
        options.add_generation_prompt = true;
        return QString::fromStdString(templates->render(conversation(target), options));
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return {};
    }
}

QStringList ChatSession::specialTokens() const {
    QStringList out;
    const ModelChatTemplates* templates = bridge_->chatTemplates();
    if (!templates) return out;
    for (const auto& [name, token] : templates->special_tokens()) out << QString::fromStdString(token);
    for (const auto& token : templates->additional_special_tokens()) out << QString::fromStdString(token);
    out.removeAll(QString());
    out.removeDuplicates();
    return out;
}

}  // namespace lorascope::ui
