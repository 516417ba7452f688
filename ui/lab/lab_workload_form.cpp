#include "lab/lab_workload_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace lorascope::ui {

namespace {
QSpinBox* spin(QWidget* parent, int lo, int hi, int value, const QString& name) {
    auto* s = new QSpinBox(parent);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setAccessibleName(name);
    return s;
}
QWidget* pair(QWidget* parent, QWidget* a, QWidget* b) {
    auto* w = new QWidget(parent);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(a);
    l->addWidget(new QLabel(QStringLiteral("–"), w));
    l->addWidget(b);
    return w;
}
// The sampling and beam mixes: round robin over the requests (params_mix).
const char* const kMixes[][3] = {
    {"greedy", nullptr, nullptr},
    {"greedy + sampling", R"({"do_sample": true, "temperature": 0.8, "top_p": 0.95, "seed": 1})", nullptr},
    {"greedy + 2-beam", R"({"num_beams": 2})", nullptr},
    {"greedy + sampling + 2-beam", R"({"do_sample": true, "temperature": 0.8, "top_p": 0.95, "seed": 1})", R"({"num_beams": 2})"},
};
bool isJsonLines(const Workload& w) {
    return w.path.size() > 6 && w.path.compare(w.path.size() - 6, 6, ".jsonl") == 0;
}
}  // namespace

LabWorkloadForm::LabWorkloadForm(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    source_ = new QComboBox(this);
    source_->addItem(tr("Synthetic (defined here)"));
    source_->setAccessibleName(tr("Workload source"));
    source_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);   // a long file name must not widen the lab
    source_->setMinimumContentsLength(14);
    auto* load = new QPushButton(tr("Load…"), this);
    load->setToolTip(tr("A lorascope-cli bench workload (.json) or JSON Lines prompts (.jsonl)"));
    auto* save = new QPushButton(tr("Save…"), this);
    save->setToolTip(tr("Write this workload as a lorascope-cli bench workload file"));
    auto* files_row = new QWidget(this);
    auto* fl = new QHBoxLayout(files_row);
    fl->setContentsMargins(0, 0, 0, 0);
    fl->addWidget(load);
    fl->addWidget(save);
    fl->addStretch(1);
    form->addRow(tr("Workload"), source_);
    form->addRow(QString(), files_row);
    loaded_label_ = new QLabel(this);
    loaded_label_->setWordWrap(true);
    loaded_label_->hide();
    form->addRow(loaded_label_);

    count_ = spin(this, 1, 100000, 24, tr("Request count"));
    form->addRow(tr("Requests"), count_);
    prompt_min_ = spin(this, 1, 8192, 4, tr("Shortest prompt, tokens"));
    prompt_max_ = spin(this, 1, 8192, 24, tr("Longest prompt, tokens"));
    form->addRow(tr("Prompt tokens"), pair(this, prompt_min_, prompt_max_));
    new_min_ = spin(this, 1, 4096, 4, tr("Fewest new tokens"));
    new_max_ = spin(this, 1, 4096, 40, tr("Most new tokens"));
    form->addRow(tr("New tokens"), pair(this, new_min_, new_max_));
    ignore_eos_ = new QCheckBox(tr("ignore eos (lengths as drawn)"), this);
    ignore_eos_->setChecked(true);
    form->addRow(QString(), ignore_eos_);
    seed_ = spin(this, 0, 1 << 30, 7, tr("Seed of the synthetic prompts"));
    form->addRow(tr("Seed"), seed_);

    arrival_ = new QComboBox(this);
    arrival_->addItems({tr("All at once"), tr("Poisson"), tr("Bursts")});
    arrival_->setAccessibleName(tr("Arrival"));
    form->addRow(tr("Arrival"), arrival_);
    rate_ = new QDoubleSpinBox(this);
    rate_->setRange(0.01, 100000);
    rate_->setValue(20);
    rate_->setSuffix(tr(" req/s"));
    rate_->setAccessibleName(tr("Poisson rate"));
    form->addRow(tr("Rate"), rate_);
    burst_size_ = spin(this, 1, 100000, 8, tr("Requests per burst"));
    burst_interval_ = new QDoubleSpinBox(this);
    burst_interval_->setRange(0, 3600);
    burst_interval_->setValue(1.0);
    burst_interval_->setSuffix(tr(" s"));
    burst_interval_->setAccessibleName(tr("Seconds between bursts"));
    form->addRow(tr("Bursts"), pair(this, burst_size_, burst_interval_));

    adapters_ = new QLineEdit(this);
    adapters_->setPlaceholderText(tr("base only"));
    adapters_->setToolTip(tr("Adapter names, comma-separated, round robin over the requests; \"base\" is the base model"));
    adapters_->setAccessibleName(tr("Adapter mix"));
    form->addRow(tr("Adapters"), adapters_);
    mix_ = new QComboBox(this);
    for (const auto& m : kMixes) mix_->addItem(tr(m[0]));
    mix_->setAccessibleName(tr("Sampling and beam mix"));
    form->addRow(tr("Decoding"), mix_);

    connect(load, &QPushButton::clicked, this, &LabWorkloadForm::loadRequested);
    connect(save, &QPushButton::clicked, this, &LabWorkloadForm::saveRequested);
    connect(source_, qOverload<int>(&QComboBox::currentIndexChanged), this, &LabWorkloadForm::refreshEnabled);
    connect(arrival_, qOverload<int>(&QComboBox::currentIndexChanged), this, &LabWorkloadForm::refreshEnabled);
    refreshEnabled();
}

void LabWorkloadForm::refreshEnabled() {
    const bool synthetic = source_->currentIndex() == 0 || !loaded_;
    const bool jsonl = loaded_ && !synthetic && isJsonLines(*loaded_);
    for (QWidget* w : std::initializer_list<QWidget*>{count_, prompt_min_, prompt_max_, new_min_, new_max_, seed_, adapters_, mix_, ignore_eos_})
        w->setEnabled(synthetic);
    // Loaded prompts (JSON Lines) take the arrival set here; a bench file keeps its own.
    const bool arrival_here = synthetic || jsonl;
    arrival_->setEnabled(arrival_here);
    rate_->setEnabled(arrival_here && arrival_->currentIndex() == 1);
    burst_size_->setEnabled(arrival_here && arrival_->currentIndex() == 2);
    burst_interval_->setEnabled(arrival_here && arrival_->currentIndex() == 2);
    loaded_label_->setVisible(!synthetic);
}

Workload LabWorkloadForm::workload() const {
    WorkloadArrival arrival;
    arrival.kind = arrival_->currentIndex() == 1 ? ArrivalKind::Poisson : arrival_->currentIndex() == 2 ? ArrivalKind::Bursts : ArrivalKind::All;
    arrival.rate = rate_->value();
    arrival.seed = uint64_t(seed_->value());
    arrival.burst_size = burst_size_->value();
    arrival.burst_interval_s = burst_interval_->value();
    if (source_->currentIndex() != 0 && loaded_) {
        Workload w = *loaded_;
        if (isJsonLines(w)) w.arrival = arrival;
        return w;
    }
    Workload w;
    w.name = "lab";
    w.arrival = arrival;
    SyntheticWorkload s;
    s.count = count_->value();
    s.prompt_min = std::min(prompt_min_->value(), prompt_max_->value());
    s.prompt_max = std::max(prompt_min_->value(), prompt_max_->value());
    s.max_new_min = std::min(new_min_->value(), new_max_->value());
    s.max_new_max = std::max(new_min_->value(), new_max_->value());
    s.seed = uint64_t(seed_->value());
    w.synthetic = s;
    w.params_json = ignore_eos_->isChecked() ? R"({"ignore_eos": true})" : "{}";
    const auto& mix = kMixes[mix_->currentIndex()];
    if (mix[1]) {
        w.params_mix = {"{}", mix[1]};   // greedy first
        if (mix[2]) w.params_mix.push_back(mix[2]);
    }
    for (QString name : adapters_->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        name = name.trimmed();
        w.adapters.push_back(name == QLatin1String("base") ? std::string() : name.toStdString());
    }
    return w;
}

void LabWorkloadForm::setWorkload(const Workload& w) {
    if (!w.synthetic) {
        loaded_ = w;
        if (source_->count() < 2) source_->addItem(QString());
        source_->setItemText(1, tr("Loaded: %1").arg(QFileInfo(QString::fromStdString(w.path)).fileName()));
        loaded_label_->setText(tr("%1: %2 requests, arrival %3").arg(QString::fromStdString(w.name)).arg(w.requests.size())
                                   .arg(QString::fromStdString(arrival_to_json(w.arrival))));
        source_->setCurrentIndex(1);
        refreshEnabled();
        return;
    }
    const SyntheticWorkload& s = *w.synthetic;
    count_->setValue(int(s.count));
    prompt_min_->setValue(int(s.prompt_min));
    prompt_max_->setValue(int(s.prompt_max));
    if (s.max_new_min > 0) {
        new_min_->setValue(int(s.max_new_min));
        new_max_->setValue(int(s.max_new_max));
    }
    seed_->setValue(int(s.seed));
    arrival_->setCurrentIndex(w.arrival.kind == ArrivalKind::Poisson ? 1 : w.arrival.kind == ArrivalKind::Bursts ? 2 : 0);
    rate_->setValue(w.arrival.rate);
    burst_size_->setValue(int(w.arrival.burst_size));
    burst_interval_->setValue(w.arrival.burst_interval_s);
    ignore_eos_->setChecked(w.params_json.find("\"ignore_eos\":true") != std::string::npos ||
                            w.params_json.find("\"ignore_eos\": true") != std::string::npos);
    QStringList names;
    for (const auto& a : w.adapters) names << (a.empty() ? QStringLiteral("base") : QString::fromStdString(a));
    adapters_->setText(names.join(QStringLiteral(", ")));
    mix_->setCurrentIndex(0);
    source_->setCurrentIndex(0);
    refreshEnabled();
}

Workload LabWorkloadForm::preset(const QStringList& adapters) {
    Workload w;
    w.name = "lab preset: 24 requests over the base model and the adapters, all at once";
    SyntheticWorkload s;
    s.count = 24;
    s.prompt_min = 4;
    s.prompt_max = 24;
    s.max_new_min = 4;
    s.max_new_max = 40;
    s.seed = 7;
    w.synthetic = s;
    w.params_json = R"({"ignore_eos": true})";
    w.adapters.push_back(std::string());
    for (const QString& a : adapters) w.adapters.push_back(a.toStdString());
    return w;
}

void LabWorkloadForm::setAdapters(const QStringList& names) {
    if (!adapters_->text().isEmpty()) return;   // the person's own mix stays
    adapters_->setText((QStringList{QStringLiteral("base")} + names).join(QStringLiteral(", ")));
}

void LabWorkloadForm::loadFile(const QString& path) {
    const std::string p = path.toStdString();
    setWorkload(path.endsWith(QLatin1String(".jsonl")) ? read_jsonl_prompts(p) : read_workload(p));
}

}  // namespace lorascope::ui
