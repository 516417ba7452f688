// The surprise view (issue 32): one text scored under each target side by side, every token shaded
// by its log-probability (deeper = more surprising), from the engine's prompt_logprobs. For a
// decoder-only model the text is a prompt scored as it stands; for an encoder-decoder model it is
// the target (decoder text) scored given the source. Each Score sends one request per target
// (the base model and/or adapters checked in the prompt composer) that generates one token.
#pragma once

#include <QStringList>
#include <QWidget>
#include <functional>
#include <vector>

#include "engine_link/bridge_events.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace lorascope::ui {

class EngineBridge;
class RequestTableModel;
class TokenColumns;
class TokenStreamView;

class SurpriseView : public QWidget {
    Q_OBJECT
public:
    SurpriseView(RequestTableModel* model, EngineBridge* bridge, QWidget* parent = nullptr);
    // Where the targets come from when Score is pressed ("" = the base model).
    void setTargetsSource(std::function<QStringList()> targets) { targets_ = std::move(targets); }

    QLineEdit* textEdit() const { return text_; }
    QLineEdit* sourceEdit() const { return source_; }
    QPushButton* scoreButton() const { return score_; }
    // Sends the scoring requests; their tickets (none when nothing could be sent, said in the status).
    std::vector<Ticket> score();
    int columnCount() const;
    TokenStreamView* columnView(int i) const;
    QString columnTitle(int i) const;
    QString columnStats(int i) const;

public Q_SLOTS:
    void refresh();

private:
    void rebuildColumns(const std::vector<Ticket>& tickets);
    void modelChanged();
    RequestTableModel* model_;
    EngineBridge* bridge_;
    std::function<QStringList()> targets_;
    QLineEdit* text_ = nullptr;
    QLineEdit* source_ = nullptr;
    QPushButton* score_ = nullptr;
    QLabel* status_ = nullptr;
    QString legend_;
    TokenColumns* columns_ = nullptr;
};

}  // namespace lorascope::ui
