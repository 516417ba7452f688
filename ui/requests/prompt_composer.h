// Where prompts are written or loaded and aimed at the base model and/or adapters.
#pragma once

#include <QStringList>
#include <QWidget>
#include <vector>

#include "requests/prompt_source.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;

namespace lorascope::ui {

class PromptComposer : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Single, OnePerLine };
    explicit PromptComposer(QWidget* parent = nullptr);

    void setAdapters(const QStringList& names);   // keeps the checks of names that remain
    // "" stands for the base model.
    QStringList selectedTargets() const;
    void setSelectedTargets(const QStringList& targets);
    void setMode(Mode mode);
    Mode mode() const;
    void setText(const QString& text);
    // Fills the editor with one prompt per line and switches to "one prompt per line".
    void setPrompts(const QStringList& prompts);
    QString text() const;
    std::vector<PromptItem> prompts() const;
    // Reads a .txt or .jsonl file; throws lorascope::Error (the window reports it).
    void loadFile(const QString& path);
    QPlainTextEdit* editor() const { return edit_; }

Q_SIGNALS:
    void submitRequested();
    void compareRequested();
    void loadFileRequested();

private:
    void updateButtons();
    QPlainTextEdit* edit_ = nullptr;
    QComboBox* mode_ = nullptr;
    QListWidget* targets_ = nullptr;
    QPushButton *submit_ = nullptr, *compare_ = nullptr, *load_ = nullptr;
    QLabel* file_note_ = nullptr;
    std::vector<PromptItem> file_items_;   // from a loaded file, until the text is edited
    bool setting_text_ = false;
};

}  // namespace lorascope::ui
