// The request's languages in the Parameters dock: a source and a target language for models whose
// tokenizer takes them (mBART-50, NLLB: their codes, en_XX or eng_Latn), hidden for every other
// model. "Model default" sends nothing, so the tokenizer's own src_lang and generation_config's
// forced token apply, as in Hugging Face.
#pragma once

#include <QWidget>

#include <string>
#include <vector>

#include "lorascope/params.h"

class QComboBox;
class QLabel;

namespace lorascope::ui {

class LanguageFields : public QWidget {
    Q_OBJECT
public:
    explicit LanguageFields(QWidget* parent = nullptr);

    // The codes requests to the model in `model_dir` may name: its tokenizer's, when it takes
    // src_lang / tgt_lang; none otherwise (no tokenizer files, a remote model, Marian's text codes).
    static std::vector<std::string> codesOf(const QString& model_dir);

    // The loaded model's codes; empty hides the fields. Keeps a choice the new list still holds.
    void setLanguageCodes(const std::vector<std::string>& codes);
    // src_lang / tgt_lang into `params` when chosen.
    void apply(GenerationParams& params) const;
    void setChoice(const QString& source, const QString& target);   // "" = model default
    QString source() const;
    QString target() const;

Q_SIGNALS:
    void changed();

private:
    QComboBox *source_ = nullptr, *target_ = nullptr;
    QLabel* count_ = nullptr;
};

}  // namespace lorascope::ui
