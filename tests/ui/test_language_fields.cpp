// The Parameters dock's language fields (issue 30): shown with the codes of a model whose tokenizer
// takes src_lang / tgt_lang (the oracle's tiny NLLB and mBART-50), hidden for others (Marian's
// codes are text; no tokenizer at all), and what is chosen is what the requests carry.
#include <QComboBox>
#include <QLabel>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

#include "requests/language_fields.h"
#include "requests/params_panel.h"
#include "test_env.h"

using lorascope::ui::LanguageFields;
using lorascope::ui::ParamsPanel;

namespace {

nlohmann::json language_records(const std::string& name) {
    std::ifstream in(lorascope::test::oracle_dir() + "/languages/" + name + "/records.json");
    nlohmann::json j;
    if (in) in >> j;
    return j;
}

}  // namespace

class TestLanguageFields : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void codes_come_from_the_tokenizer() {
        for (const char* name : {"mbart50", "nllb"}) {
            const auto records = language_records(name);
            QVERIFY2(!records.is_null(), "run the oracle_languages step");
            const QString dir = QString::fromStdString(lorascope::test::oracle_dir() + "/languages/" + name + "/model");
            QCOMPARE(nlohmann::json(LanguageFields::codesOf(dir)), records["language_codes"]);
        }
        const std::string tokenizers = lorascope::test::oracle_dir() + "/tokenizers/";
        QVERIFY(LanguageFields::codesOf(QString::fromStdString(tokenizers + "marian")).empty());   // >>xx<< in the text
        QVERIFY(LanguageFields::codesOf(QString::fromStdString(tokenizers + "mt5_json")).empty());
        QVERIFY(LanguageFields::codesOf(QStringLiteral("http://127.0.0.1:1/")).empty());
    }

    void chosen_languages_go_into_the_params() {
        ParamsPanel panel;
        panel.show();
        auto* source = panel.findChild<QComboBox*>(QStringLiteral("srcLang"));
        auto* target = panel.findChild<QComboBox*>(QStringLiteral("tgtLang"));
        QVERIFY(source && target);
        QVERIFY(!source->isVisible());
        QVERIFY(!panel.params().src_lang && !panel.params().tgt_lang);

        const std::vector<std::string> codes = language_records("nllb")["language_codes"];
        QSignalSpy changed(&panel, &ParamsPanel::paramsChanged);
        panel.setLanguageCodes(codes);
        QVERIFY(source->isVisible() && target->isVisible());
        QCOMPARE(source->count(), int(codes.size()) + 1);   // and "Model default"
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("languageCount"))->text().contains(QString::number(codes.size())));
        QVERIFY(!panel.params().src_lang && !panel.params().tgt_lang);   // the model's defaults
        source->setCurrentIndex(source->findText(QStringLiteral("deu_Latn")));
        target->setCurrentIndex(target->findText(QStringLiteral("fra_Latn")));
        QCOMPARE(changed.count(), 2);
        QCOMPARE(*panel.params().src_lang, std::string("deu_Latn"));
        QCOMPARE(*panel.params().tgt_lang, std::string("fra_Latn"));

        panel.setLanguageCodes({});   // a model without languages: nothing sent
        QVERIFY(!source->isVisible());
        QVERIFY(!panel.params().src_lang && !panel.params().tgt_lang);
    }
};

QTEST_MAIN(TestLanguageFields)
#include "test_language_fields.moc"
