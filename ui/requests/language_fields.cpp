#include "requests/language_fields.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>

#include "lorascope/error.h"
#include "lorascope/tokenizer.h"

namespace lorascope::ui {

namespace {

void fill(QComboBox* box, const std::vector<std::string>& codes) {
    const QString kept = box->currentData().toString();
    box->blockSignals(true);
    box->clear();
    box->addItem(QObject::tr("Model default"), QString());
    for (const std::string& code : codes) box->addItem(QString::fromStdString(code), QString::fromStdString(code));
    const int at = box->findData(kept);
    box->setCurrentIndex(at < 0 ? 0 : at);
    box->blockSignals(false);
}

void choose(QComboBox* box, const QString& code) {
    const int at = box->findData(code);
    box->setCurrentIndex(at < 0 ? 0 : at);
}

}  // namespace

LanguageFields::LanguageFields(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    source_ = new QComboBox(this);
    target_ = new QComboBox(this);
    for (QComboBox* box : {source_, target_}) {
        box->setObjectName(box == source_ ? QStringLiteral("srcLang") : QStringLiteral("tgtLang"));
        // 202 NLLB codes: typing a code's first letters finds it.
        box->setMaxVisibleItems(20);
        connect(box, &QComboBox::currentIndexChanged, this, &LanguageFields::changed);
    }
    source_->setToolTip(tr("src_lang: the prompt is tokenized with this language's code, where the model's tokenizer puts it"));
    target_->setToolTip(tr("tgt_lang: this language's code is forced as the first generated token"));
    count_ = new QLabel(this);
    count_->setObjectName(QStringLiteral("languageCount"));
    form->addRow(tr("Source lang."), source_);
    form->addRow(tr("Target lang."), target_);
    form->addRow(QString(), count_);
    setLanguageCodes({});
}

std::vector<std::string> LanguageFields::codesOf(const QString& model_dir) {
    try {
        const auto tokenizer = load_tokenizer(model_dir.toStdString());
        if (tokenizer->takes_language_options()) return tokenizer->language_codes();
    } catch (const Error&) {
        // No tokenizer here (ids-only checkpoint, a remote model's address): no language fields.
    }
    return {};
}

void LanguageFields::setLanguageCodes(const std::vector<std::string>& codes) {
    fill(source_, codes);
    fill(target_, codes);
    count_->setText(tr("%n language(s)", nullptr, int(codes.size())));
    setVisible(!codes.empty());
}

void LanguageFields::apply(GenerationParams& params) const {
    if (!source().isEmpty()) params.src_lang = source().toStdString();
    if (!target().isEmpty()) params.tgt_lang = target().toStdString();
}

void LanguageFields::setChoice(const QString& source, const QString& target) {
    choose(source_, source);
    choose(target_, target);
}

QString LanguageFields::source() const { return isHidden() ? QString() : source_->currentData().toString(); }
QString LanguageFields::target() const { return isHidden() ? QString() : target_->currentData().toString(); }

}  // namespace lorascope::ui
