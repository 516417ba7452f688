// Every GenerationParams control, filled from the model's generation config. Only values the
// person changed are sent (the rest stays "absent" so the engine resolves them exactly as the
// model's generation_config.json says).
#pragma once

#include <QVariantMap>
#include <QWidget>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/config.h"
#include "lorascope/params.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace lorascope::ui {

class LanguageFields;

class ParamsPanel : public QWidget {
    Q_OBJECT
public:
    // Every field with a value: what the widgets show.
    struct Values {
        int64_t max_new_tokens = 20, min_new_tokens = 0;
        bool do_sample = false;
        double temperature = 1.0;
        int64_t top_k = 50;
        double top_p = 1.0, typical_p = 1.0, min_p = 0.0, repetition_penalty = 1.0;
        int64_t no_repeat_ngram_size = 0, num_beams = 1;
        double length_penalty = 1.0;
        EarlyStopping early_stopping = EarlyStopping::False;
        QString stop;            // one sequence per line ("\n" written as \n)
        bool fixed_seed = false;
        int64_t seed = 0;
        bool ignore_eos = false;
        bool logprobs = true;    // the comparison view's tooltips need them
        // Alternatives per generated token (params.top_alternatives; 0 = none), shown on hover in
        // the board and the comparison. Not sent with beam search, which the engine refuses them.
        int64_t alternatives = 5;
    };
    // Custom: the controls match no preset (the person's own or saved changes).
    enum class Preset { ModelDefaults, Greedy, Beam4, CreativeSampling, Custom };

    explicit ParamsPanel(QWidget* parent = nullptr);

    void setGenerationConfig(const GenerationConfig& config);   // new defaults; keeps the person's changes
    // The most new tokens the loaded model holds (none: unbounded): the control stops there and
    // says so once, beside it.
    void setMaxNewTokensLimit(std::optional<int64_t> most, int64_t positions = 0);
    int64_t maxNewTokensLimit() const;
    GenerationParams params() const;   // with the chosen languages (LanguageFields)
    // The model's request languages (LanguageFields::codesOf); empty hides the language fields.
    void setLanguageCodes(const std::vector<std::string>& codes);
    Values values() const;
    void setValues(const Values& values);
    void applyPreset(Preset preset);

    // The person's changes, for QSettings.
    QVariantMap changedValues() const;
    void applyChangedValues(const QVariantMap& map);
    // The preset the controls show now: the one they match, else Custom.
    Preset shownPreset() const;

    static Values valuesFrom(const GenerationConfig& config);
    // The fields of `v` that differ from `d`, by their generation_config names.
    static QVariantMap differences(const Values& v, const Values& d);

Q_SIGNALS:
    void paramsChanged();

private:
    void createControls();
    void addRows(QFormLayout* form);
    void updateEnabledState();
    void refreshPresetShown();
    Values presetValues(Preset preset) const;
    Values defaults_;
    bool has_config_ = false;
    QString max_length_note_;
    QComboBox* preset_ = nullptr;
    QSpinBox *max_new_ = nullptr, *min_new_ = nullptr, *top_k_ = nullptr, *no_repeat_ = nullptr, *beams_ = nullptr, *seed_ = nullptr,
             *alternatives_ = nullptr;
    QCheckBox *do_sample_ = nullptr, *fixed_seed_ = nullptr, *ignore_eos_ = nullptr, *logprobs_ = nullptr;
    QDoubleSpinBox *temperature_ = nullptr, *top_p_ = nullptr, *typical_p_ = nullptr, *min_p_ = nullptr,
                   *repetition_ = nullptr, *length_penalty_ = nullptr;
    QComboBox* early_stopping_ = nullptr;
    QLineEdit* stop_ = nullptr;
    QLabel *source_ = nullptr, *max_new_note_ = nullptr;
    LanguageFields* languages_ = nullptr;
};

}  // namespace lorascope::ui
