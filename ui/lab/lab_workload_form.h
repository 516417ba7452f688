// The lab's workload: a synthetic one defined here (request count, prompt-length and
// max_new_tokens ranges, arrival all at once / Poisson / bursts, adapter mix, sampling and beam
// mix), or one loaded from a `lorascope-cli bench` workload file or JSON Lines prompts. Produces
// the engine library's lorascope::Workload; the lab and the CLI build their requests from it alike.
#pragma once

#include <QWidget>
#include <optional>

#include "lorascope/workload.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace lorascope::ui {

class LabWorkloadForm : public QWidget {
    Q_OBJECT
public:
    explicit LabWorkloadForm(QWidget* parent = nullptr);

    Workload workload() const;
    void setWorkload(const Workload& workload);   // synthetic: into the fields; else held as loaded
    // A workload whose joins and leaves are plain to see on a tiny model: 24 requests of 4-24
    // prompt tokens and 4-40 new tokens (eos ignored) over the base model and `adapters`.
    static Workload preset(const QStringList& adapters);
    void setAdapters(const QStringList& names);    // the adapter mix offered: base + these
    // Reads a bench workload (.json) or JSON Lines prompts (.jsonl); throws lorascope::Error.
    void loadFile(const QString& path);

Q_SIGNALS:
    void loadRequested();
    void saveRequested();

private:
    void refreshEnabled();
    QComboBox* source_ = nullptr;
    QSpinBox *count_ = nullptr, *prompt_min_ = nullptr, *prompt_max_ = nullptr, *new_min_ = nullptr, *new_max_ = nullptr,
             *seed_ = nullptr, *burst_size_ = nullptr;
    QComboBox *arrival_ = nullptr, *mix_ = nullptr;
    QDoubleSpinBox *rate_ = nullptr, *burst_interval_ = nullptr;
    QLineEdit* adapters_ = nullptr;
    QCheckBox* ignore_eos_ = nullptr;
    QLabel* loaded_label_ = nullptr;
    std::optional<Workload> loaded_;
};

}  // namespace lorascope::ui
