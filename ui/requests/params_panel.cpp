#include "requests/params_panel.h"

#include "requests/language_fields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>

namespace lorascope::ui {

namespace {
QSpinBox* intBox(int min, int max, const QString& name, QWidget* parent) {
    auto* b = new QSpinBox(parent);
    b->setRange(min, max);
    b->setAccessibleName(name);
    return b;
}
QDoubleSpinBox* realBox(double min, double max, double step, int decimals, const QString& name, QWidget* parent) {
    auto* b = new QDoubleSpinBox(parent);
    b->setRange(min, max);
    b->setSingleStep(step);
    b->setDecimals(decimals);
    b->setAccessibleName(name);
    return b;
}
std::vector<std::string> stopList(const QString& text) {
    std::vector<std::string> out;
    for (QString s : text.split(QStringLiteral(" | "), Qt::SkipEmptyParts)) {
        s.replace(QStringLiteral("\\n"), QStringLiteral("\n"));
        out.push_back(s.toStdString());
    }
    return out;
}
}  // namespace

ParamsPanel::ParamsPanel(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    preset_ = new QComboBox(this);
    preset_->addItems({tr("Model defaults"), tr("Greedy"), tr("Beam search (4 beams)"), tr("Creative sampling"), tr("Custom")});
    preset_->setAccessibleName(tr("Parameter preset"));
    preset_->setToolTip(tr("Fill the controls with a preset; \"Model defaults\" is the model's generation_config.json"));
    outer->addWidget(preset_);
    source_ = new QLabel(tr("Defaults: Hugging Face's (no model loaded)"), this);
    source_->setWordWrap(true);
    outer->addWidget(source_);
    languages_ = new LanguageFields(this);   // hidden unless the model's tokenizer takes languages
    outer->addWidget(languages_);
    connect(languages_, &LanguageFields::changed, this, &ParamsPanel::paramsChanged);

    createControls();
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    addRows(form);
    outer->addLayout(form);
    outer->addStretch(1);

    setValues(defaults_);
    connect(preset_, qOverload<int>(&QComboBox::activated), this, [this](int i) {
        if (Preset(i) == Preset::Custom) refreshPresetShown();   // nothing to apply: shows what is
        else applyPreset(Preset(i));
    });
    auto changed = [this] { updateEnabledState(); refreshPresetShown(); Q_EMIT paramsChanged(); };
    for (QSpinBox* b : {max_new_, min_new_, top_k_, no_repeat_, beams_, seed_, alternatives_}) connect(b, &QSpinBox::valueChanged, this, changed);
    for (QDoubleSpinBox* b : {temperature_, top_p_, typical_p_, min_p_, repetition_, length_penalty_})
        connect(b, &QDoubleSpinBox::valueChanged, this, changed);
    for (QCheckBox* b : {do_sample_, fixed_seed_, ignore_eos_, logprobs_}) connect(b, &QCheckBox::toggled, this, changed);
    connect(early_stopping_, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(stop_, &QLineEdit::textChanged, this, changed);
    updateEnabledState();
}

void ParamsPanel::createControls() {
    max_new_ = intBox(1, 1000000, tr("Maximum new tokens"), this);
    min_new_ = intBox(0, 1000000, tr("Minimum new tokens"), this);
    do_sample_ = new QCheckBox(tr("Sample"), this);
    do_sample_->setToolTip(tr("Sample from the distribution; otherwise greedy (or beam search with beams > 1)"));
    do_sample_->setAccessibleName(tr("Sample"));
    temperature_ = realBox(0.01, 10.0, 0.05, 2, tr("Temperature"), this);
    top_k_ = intBox(0, 1000000, tr("Top k"), this);
    top_k_->setSpecialValueText(tr("off"));
    top_p_ = realBox(0.0, 1.0, 0.01, 3, tr("Top p"), this);
    typical_p_ = realBox(0.0, 1.0, 0.01, 3, tr("Typical p"), this);
    min_p_ = realBox(0.0, 1.0, 0.01, 3, tr("Min p"), this);
    min_p_->setSpecialValueText(tr("off"));
    repetition_ = realBox(0.01, 10.0, 0.05, 2, tr("Repetition penalty"), this);
    no_repeat_ = intBox(0, 64, tr("No repeat n-gram size"), this);
    no_repeat_->setSpecialValueText(tr("off"));
    beams_ = intBox(1, 64, tr("Number of beams"), this);
    length_penalty_ = realBox(-10.0, 10.0, 0.1, 2, tr("Length penalty"), this);
    early_stopping_ = new QComboBox(this);
    early_stopping_->addItems({tr("false"), tr("true"), tr("never")});
    early_stopping_->setAccessibleName(tr("Early stopping"));
    stop_ = new QLineEdit(this);
    stop_->setPlaceholderText(tr("e.g. ###  |  \\n\\n"));
    stop_->setToolTip(tr("Stop sequences separated by \" | \"; write a newline as \\n"));
    stop_->setAccessibleName(tr("Stop sequences"));
    fixed_seed_ = new QCheckBox(tr("fixed"), this);
    fixed_seed_->setAccessibleName(tr("Use a fixed seed"));
    seed_ = intBox(0, INT_MAX, tr("Seed"), this);
    ignore_eos_ = new QCheckBox(tr("Ignore EOS"), this);
    ignore_eos_->setToolTip(tr("Keep generating past the end-of-sequence token"));
    ignore_eos_->setAccessibleName(tr("Ignore end of sequence"));
    logprobs_ = new QCheckBox(tr("Logprobs"), this);
    logprobs_->setToolTip(tr("Report each token's log-probability (shown on hover in the comparison view)"));
    logprobs_->setAccessibleName(tr("Report log-probabilities"));
    alternatives_ = intBox(0, int(kMaxTopAlternatives), tr("Alternatives per token"), this);
    alternatives_->setSpecialValueText(tr("off"));
    alternatives_->setToolTip(tr("The most likely tokens at each generated position, shown when you hover a token "
                                 "(not with beam search)"));

}

void ParamsPanel::addRows(QFormLayout* form) {
    auto* seed_row = new QHBoxLayout;
    seed_row->addWidget(fixed_seed_);
    seed_row->addWidget(seed_, 1);
    form->addRow(tr("Max new tokens"), max_new_);
    max_new_note_ = new QLabel(this);
    max_new_note_->setWordWrap(true);
    max_new_note_->setAccessibleName(tr("Limit of new tokens"));
    max_new_note_->hide();
    form->addRow(QString(), max_new_note_);
    form->addRow(tr("Min new tokens"), min_new_);
    form->addRow(QString(), do_sample_);
    form->addRow(tr("Temperature"), temperature_);
    form->addRow(tr("Top k"), top_k_);
    form->addRow(tr("Top p"), top_p_);
    form->addRow(tr("Typical p"), typical_p_);
    form->addRow(tr("Min p"), min_p_);
    form->addRow(tr("Repetition pen."), repetition_);
    form->addRow(tr("No repeat n-gram"), no_repeat_);
    form->addRow(tr("Beams"), beams_);
    form->addRow(tr("Length pen."), length_penalty_);
    form->addRow(tr("Early stop"), early_stopping_);
    form->addRow(tr("Stop"), stop_);
    form->addRow(tr("Seed"), seed_row);
    form->addRow(QString(), ignore_eos_);
    form->addRow(QString(), logprobs_);
    form->addRow(tr("Alternatives"), alternatives_);
}

ParamsPanel::Values ParamsPanel::valuesFrom(const GenerationConfig& c) {
    Values v;
    v.max_new_tokens = c.max_new_tokens.value_or(c.max_length.value_or(20));
    v.min_new_tokens = c.min_new_tokens.value_or(0);
    v.do_sample = c.do_sample;
    v.temperature = c.temperature;
    v.top_k = c.top_k;
    v.top_p = c.top_p;
    v.typical_p = c.typical_p;
    v.min_p = c.min_p.value_or(0.0);
    v.repetition_penalty = c.repetition_penalty;
    v.no_repeat_ngram_size = c.no_repeat_ngram_size;
    v.num_beams = c.num_beams;
    v.length_penalty = c.length_penalty;
    v.early_stopping = c.early_stopping ? EarlyStopping::True : EarlyStopping::False;
    return v;
}

void ParamsPanel::setGenerationConfig(const GenerationConfig& config) {
    const QVariantMap mine = changedValues();
    defaults_ = valuesFrom(config);
    setValues(defaults_);
    applyChangedValues(mine);
    has_config_ = true;
    max_length_note_ = config.max_new_tokens ? QString() : tr(" (max_length %1 in total)").arg(config.max_length.value_or(20));
    refreshPresetShown();
}

void ParamsPanel::setMaxNewTokensLimit(std::optional<int64_t> most, int64_t positions) {
    max_new_->setMaximum(most ? int(std::min<int64_t>(*most, 1000000)) : 1000000);   // clamps the value shown, and so sent
    max_new_note_->setVisible(most.has_value());
    if (most) max_new_note_->setText(tr("At most %1: the model has %2 positions.").arg(*most).arg(positions));
    refreshPresetShown();
}

int64_t ParamsPanel::maxNewTokensLimit() const { return max_new_->maximum(); }

ParamsPanel::Values ParamsPanel::values() const {
    Values v;
    v.max_new_tokens = max_new_->value();
    v.min_new_tokens = min_new_->value();
    v.do_sample = do_sample_->isChecked();
    v.temperature = temperature_->value();
    v.top_k = top_k_->value();
    v.top_p = top_p_->value();
    v.typical_p = typical_p_->value();
    v.min_p = min_p_->value();
    v.repetition_penalty = repetition_->value();
    v.no_repeat_ngram_size = no_repeat_->value();
    v.num_beams = beams_->value();
    v.length_penalty = length_penalty_->value();
    v.early_stopping = EarlyStopping(early_stopping_->currentIndex());
    v.stop = stop_->text();
    v.fixed_seed = fixed_seed_->isChecked();
    v.seed = seed_->value();
    v.ignore_eos = ignore_eos_->isChecked();
    v.logprobs = logprobs_->isChecked();
    v.alternatives = alternatives_->value();
    return v;
}

void ParamsPanel::setValues(const Values& v) {
    const QSignalBlocker block(this);
    max_new_->setValue(int(v.max_new_tokens));
    min_new_->setValue(int(v.min_new_tokens));
    do_sample_->setChecked(v.do_sample);
    temperature_->setValue(v.temperature);
    top_k_->setValue(int(v.top_k));
    top_p_->setValue(v.top_p);
    typical_p_->setValue(v.typical_p);
    min_p_->setValue(v.min_p);
    repetition_->setValue(v.repetition_penalty);
    no_repeat_->setValue(int(v.no_repeat_ngram_size));
    beams_->setValue(int(v.num_beams));
    length_penalty_->setValue(v.length_penalty);
    early_stopping_->setCurrentIndex(int(v.early_stopping));
    stop_->setText(v.stop);
    fixed_seed_->setChecked(v.fixed_seed);
    seed_->setValue(int(v.seed));
    ignore_eos_->setChecked(v.ignore_eos);
    logprobs_->setChecked(v.logprobs);
    alternatives_->setValue(int(v.alternatives));
    updateEnabledState();
    refreshPresetShown();
    Q_EMIT paramsChanged();
}

ParamsPanel::Values ParamsPanel::presetValues(Preset preset) const {
    Values v = defaults_;
    switch (preset) {
    case Preset::ModelDefaults:
    case Preset::Custom: return v;
    case Preset::Greedy:
        v.do_sample = false;
        v.num_beams = 1;
        break;
    case Preset::Beam4:
        v.do_sample = false;
        v.num_beams = 4;
        v.early_stopping = EarlyStopping::True;
        break;
    case Preset::CreativeSampling:
        v.do_sample = true;
        v.num_beams = 1;
        v.temperature = 0.9;
        v.top_k = 50;
        v.top_p = 0.95;
        v.repetition_penalty = 1.1;
        break;
    }
    v.max_new_tokens = max_new_->value();   // a preset is about decoding, not length
    return v;
}

void ParamsPanel::applyPreset(Preset preset) {
    if (preset == Preset::Custom) return;
    setValues(presetValues(preset));
    preset_->setCurrentIndex(int(preset));
}

ParamsPanel::Preset ParamsPanel::shownPreset() const { return Preset(preset_->currentIndex()); }

// The preset the controls match (Model defaults only at the model's own length too), else Custom;
// and which fields differ from the model's defaults, so what applies is what the panel says.
void ParamsPanel::refreshPresetShown() {
    const Values v = values();
    Preset shown = Preset::Custom;
    for (Preset p : {Preset::ModelDefaults, Preset::Greedy, Preset::Beam4, Preset::CreativeSampling}) {
        Values want = presetValues(p);
        if (p == Preset::ModelDefaults) want.max_new_tokens = defaults_.max_new_tokens;
        if (differences(v, want).isEmpty()) {
            shown = p;
            break;
        }
    }
    if (preset_->currentIndex() != int(shown)) preset_->setCurrentIndex(int(shown));
    const QStringList changed = differences(v, defaults_).keys();
    QString text = has_config_ ? tr("Defaults: the model's generation config%1").arg(max_length_note_)
                               : tr("Defaults: Hugging Face's (no model loaded)");
    if (!changed.isEmpty()) text += tr("; changed: %1").arg(changed.join(QStringLiteral(", ")));
    source_->setText(text);
}

void ParamsPanel::updateEnabledState() {
    const bool sampling = do_sample_->isChecked();
    for (QWidget* w : std::initializer_list<QWidget*>{temperature_, top_k_, top_p_, typical_p_, min_p_}) w->setEnabled(sampling);
    const bool beams = beams_->value() > 1;
    length_penalty_->setEnabled(beams);
    early_stopping_->setEnabled(beams);
    alternatives_->setEnabled(!beams);
    seed_->setEnabled(fixed_seed_->isChecked());
}

GenerationParams ParamsPanel::params() const {
    const Values v = values();
    const Values& d = defaults_;
    GenerationParams p;
    if (v.max_new_tokens != d.max_new_tokens) p.max_new_tokens = v.max_new_tokens;
    if (v.min_new_tokens != d.min_new_tokens) p.min_new_tokens = v.min_new_tokens;
    if (v.do_sample != d.do_sample) p.do_sample = v.do_sample;
    if (v.temperature != d.temperature) p.temperature = v.temperature;
    if (v.top_k != d.top_k) p.top_k = v.top_k;
    if (v.top_p != d.top_p) p.top_p = v.top_p;
    if (v.typical_p != d.typical_p) p.typical_p = v.typical_p;
    if (v.min_p != d.min_p && v.min_p > 0) p.min_p = v.min_p;
    if (v.repetition_penalty != d.repetition_penalty) p.repetition_penalty = v.repetition_penalty;
    if (v.no_repeat_ngram_size != d.no_repeat_ngram_size) p.no_repeat_ngram_size = v.no_repeat_ngram_size;
    if (v.num_beams != d.num_beams) p.num_beams = v.num_beams;
    if (v.length_penalty != d.length_penalty) p.length_penalty = v.length_penalty;
    if (v.early_stopping != d.early_stopping) p.early_stopping = v.early_stopping;
    if (!v.stop.trimmed().isEmpty()) p.stop = stopList(v.stop);
    if (v.fixed_seed) p.seed = uint64_t(v.seed);
    if (v.ignore_eos) p.ignore_eos = true;
    p.logprobs = v.logprobs;
    languages_->apply(p);
    if (v.alternatives > 0 && v.num_beams <= 1) p.top_alternatives = v.alternatives;
    return p;
}

void ParamsPanel::setLanguageCodes(const std::vector<std::string>& codes) { languages_->setLanguageCodes(codes); }

QVariantMap ParamsPanel::changedValues() const { return differences(values(), defaults_); }

QVariantMap ParamsPanel::differences(const Values& v, const Values& d) {
    QVariantMap m;
    auto put = [&m](const char* key, auto value, auto def) { if (value != def) m.insert(QLatin1String(key), QVariant::fromValue(value)); };
    put("max_new_tokens", qint64(v.max_new_tokens), qint64(d.max_new_tokens));
    put("min_new_tokens", qint64(v.min_new_tokens), qint64(d.min_new_tokens));
    put("do_sample", v.do_sample, d.do_sample);
    put("temperature", v.temperature, d.temperature);
    put("top_k", qint64(v.top_k), qint64(d.top_k));
    put("top_p", v.top_p, d.top_p);
    put("typical_p", v.typical_p, d.typical_p);
    put("min_p", v.min_p, d.min_p);
    put("repetition_penalty", v.repetition_penalty, d.repetition_penalty);
    put("no_repeat_ngram_size", qint64(v.no_repeat_ngram_size), qint64(d.no_repeat_ngram_size));
    put("num_beams", qint64(v.num_beams), qint64(d.num_beams));
    put("length_penalty", v.length_penalty, d.length_penalty);
    put("early_stopping", int(v.early_stopping), int(d.early_stopping));
    put("stop", v.stop, d.stop);
    put("fixed_seed", v.fixed_seed, d.fixed_seed);
    put("seed", qint64(v.seed), qint64(d.seed));
    put("ignore_eos", v.ignore_eos, d.ignore_eos);
    put("logprobs", v.logprobs, d.logprobs);
    put("alternatives", qint64(v.alternatives), qint64(d.alternatives));
    return m;
}

void ParamsPanel::applyChangedValues(const QVariantMap& m) {
    Values v = values();
    auto get = [&m](const char* key, auto& field) {
        const QVariant value = m.value(QLatin1String(key));
        if (value.isValid()) field = value.value<std::decay_t<decltype(field)>>();
    };
    get("max_new_tokens", v.max_new_tokens);
    get("min_new_tokens", v.min_new_tokens);
    get("do_sample", v.do_sample);
    get("temperature", v.temperature);
    get("top_k", v.top_k);
    get("top_p", v.top_p);
    get("typical_p", v.typical_p);
    get("min_p", v.min_p);
    get("repetition_penalty", v.repetition_penalty);
    get("no_repeat_ngram_size", v.no_repeat_ngram_size);
    get("num_beams", v.num_beams);
    get("length_penalty", v.length_penalty);
    if (m.contains(QStringLiteral("early_stopping"))) v.early_stopping = EarlyStopping(qBound(0, m.value(QStringLiteral("early_stopping")).toInt(), 2));
    get("stop", v.stop);
    get("fixed_seed", v.fixed_seed);
    get("seed", v.seed);
    get("ignore_eos", v.ignore_eos);
    get("logprobs", v.logprobs);
    get("alternatives", v.alternatives);
    setValues(v);
}

}  // namespace lorascope::ui
