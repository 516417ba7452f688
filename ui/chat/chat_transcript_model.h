// One conversation pane's turns (system prompt aside) as an item model: the user's turns, and the
// assistant's as they stream from the engine (by the bridge's ticket) or end in an error. It also
// gives the conversation back as the engine's ChatMessage list (finished answers only), so that
// the next request carries what this pane shows, and supports edit-and-resend of the last user turn.
#pragma once

#include <QAbstractListModel>
#include <QString>

#include <vector>

#include "engine_link/bridge_events.h"
#include "lorascope/chat.h"

namespace lorascope::ui {

struct ChatTurn {
    QString role;            // "user" or "assistant"
    QString text;
    Ticket ticket = 0;       // assistant turns: the request answering
    bool streaming = false;  // assistant turns: tokens still arriving
    QString error;           // assistant turns: why the request failed (empty: it did not)
};

class ChatTranscriptModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { TurnRole = Qt::UserRole + 1, StreamingRole, ErrorRole };

    explicit ChatTranscriptModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;

    void addUserTurn(const QString& text);
    void beginAnswer(Ticket ticket);
    // The answer `ticket` streams; false when no turn of this pane waits for it.
    bool appendDelta(Ticket ticket, const QString& text);
    bool finishAnswer(Ticket ticket, const FinishEvent& finish);
    // Edit-and-resend: the turns after the last user turn go, and that turn's text becomes `text`.
    // False when there is no user turn.
    bool replaceLastUserTurn(const QString& text);
    QString lastUserText() const;
    void clear();

    bool streaming() const;
    const std::vector<ChatTurn>& turns() const { return turns_; }
    // The turns as the engine takes them: failed or unfinished answers are left out.
    std::vector<ChatMessage> messages() const;

private:
    int rowOf(Ticket ticket) const;
    std::vector<ChatTurn> turns_;
};

}  // namespace lorascope::ui
