// Export of a lab run into a directory: lab-report.md (workload, policies, the summary table,
// and the charts' image), lab-steps-<policy>.csv and lab-requests-<policy>.csv per policy (the
// engine library's steps and requests CSVs, the same as `lorascope-cli bench --steps-csv` and
// `--requests-csv`) and lab-charts.png.
#pragma once

#include <QStringList>

class QWidget;

namespace lorascope::ui {

class LabRunner;
class LabSummaryModel;

struct LabExportInput {
    const LabRunner* runner = nullptr;
    const LabSummaryModel* summary = nullptr;
    QWidget* charts = nullptr;      // grabbed into the PNG
    QString workload_json;          // lorascope::workload_to_json
    QStringList policy_descriptions;
    QString model_dir;
};

// Returns the files written; on failure what was written so far, with *error set.
QStringList exportLabRun(const LabExportInput& input, const QString& dir, QString* error);

}  // namespace lorascope::ui
