// The window's Chat tab: a thin widget over ChatSession. A system prompt, the targets that answer
// (the base model and loaded adapters, checked), one pane per target side by side showing its
// transcript as it streams, a message box with Send, Edit last turn (its text back into the box;
// Send then resends it in place of the old turn and its answers) and Stop, and on demand the
// prompt each target's model really sees, special tokens marked. Keyboard: the message box has
// the focus when the tab opens; Alt+S sends, Alt+E edits the last turn, Alt+P shows the prompt.
#pragma once

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTextEdit;

namespace lorascope::ui {

class ChatSession;
class EngineBridge;

class ChatView : public QWidget {
    Q_OBJECT
public:
    explicit ChatView(EngineBridge* bridge, QWidget* parent = nullptr);

    ChatSession* session() const { return session_; }
    // For tests and screenshots: the controls a person uses.
    QListWidget* targetList() const { return targets_; }
    QLineEdit* systemPrompt() const { return system_; }
    QPlainTextEdit* messageBox() const { return input_; }
    QPushButton* sendButton() const { return send_; }
    QPushButton* editLastButton() const { return edit_last_; }
    QCheckBox* showPromptBox() const { return show_prompt_; }
    QTextEdit* promptView() const { return prompt_view_; }
    QLabel* statusLabel() const { return status_; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh_targets();
    void apply_targets();
    void rebuild_panes();
    void on_send();
    void on_edit_last();
    void refresh_prompt();
    void update_buttons();

    EngineBridge* bridge_;
    ChatSession* session_;
    QLineEdit* system_;
    QListWidget* targets_;
    QSpinBox* max_tokens_;
    QSplitter* panes_;
    QPlainTextEdit* input_;
    QPushButton* send_;
    QPushButton* edit_last_;
    QPushButton* stop_;
    QPushButton* new_chat_;
    QCheckBox* show_prompt_;
    QTextEdit* prompt_view_;
    QLabel* status_;
    bool editing_last_ = false;
};

}  // namespace lorascope::ui
