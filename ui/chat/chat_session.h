// The chat view's logic, apart from widgets: one conversation asked of several targets (the base
// model, "", and adapters by name) side by side, each target with its own pane (transcript) and
// history, one system prompt for all. Sending a user turn submits one conversation request per
// target through the window's EngineBridge, held so that they join the same engine step; the
// answers stream into their panes by ticket. Edit-and-resend replaces the last user turn and asks
// again. The prompt each target's model really sees is rendered on demand with the engine's chat
// template (none for a remote server: it renders its own).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>

#include "chat/chat_transcript_model.h"
#include "engine_link/bridge_events.h"
#include "lorascope/chat.h"

namespace lorascope::ui {

class EngineBridge;

class ChatSession : public QObject {
    Q_OBJECT
public:
    explicit ChatSession(EngineBridge* bridge, QObject* parent = nullptr);
    ~ChatSession() override;

    // A new set of targets starts a new conversation (each pane's history is its target's).
    void setTargets(const QStringList& targets);
    QStringList targets() const { return targets_; }
    ChatTranscriptModel* transcript(const QString& target) const;

    void setSystemPrompt(const QString& text) { system_prompt_ = text; }
    QString systemPrompt() const { return system_prompt_; }
    void setMaxNewTokens(int n) { max_new_tokens_ = n; }

    // False (and `failed`) when no model is loaded, no target is chosen, the text is empty or
    // answers are still streaming.
    bool send(const QString& text);
    bool resendLast(const QString& text);
    void cancel();
    void clear();
    bool busy() const;

    // Every target's conversation as its next request would carry it (without a new turn).
    Conversation conversation(const QString& target) const;
    // The text the target's model sees for its conversation (add_generation_prompt), or why not.
    QString renderedPrompt(const QString& target, QString* error) const;
    // The model's special tokens (to show them apart in a rendered prompt); empty without a template.
    QStringList specialTokens() const;

Q_SIGNALS:
    void busyChanged(bool busy);
    void failed(const QString& message);

private:
    bool check_can_send(const QString& text);
    void submit_all();
    void on_drained(const DrainBatch& batch);

    EngineBridge* bridge_;
    QStringList targets_;
    std::map<QString, std::unique_ptr<ChatTranscriptModel>> transcripts_;
    std::map<Ticket, QString> target_of_;
    QString system_prompt_;
    int max_new_tokens_ = 64;
};

}  // namespace lorascope::ui
