#include "lab/lab_export.h"

#include <QDir>
#include <QFileInfo>
#include <QFile>
#include <QPixmap>
#include <QWidget>
#include <sstream>

#include "lab/lab_runner.h"
#include "lab/lab_summary_model.h"
#include "lorascope/bench_report.h"

namespace lorascope::ui {

namespace {
bool writeFile(const QString& path, const QByteArray& bytes, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size()) {
        if (error) *error = QStringLiteral("%1: cannot write the file (%2)").arg(path, f.errorString());
        return false;
    }
    return true;
}
}  // namespace

QStringList exportLabRun(const LabExportInput& in, const QString& dir, QString* error) {
    QStringList written;
    if (!QDir().mkpath(dir)) {
        if (error) *error = QStringLiteral("%1: cannot create the directory").arg(dir);
        return written;
    }
    const QDir d(dir);
    const QString png = d.filePath(QStringLiteral("lab-charts.png"));
    if (in.charts) {
        if (!in.charts->grab().save(png, "PNG")) {
            if (error) *error = QStringLiteral("%1: could not write the PNG").arg(png);
            return written;
        }
        written << png;
    }
    QStringList csvs, request_csvs;
    for (int i = 0; in.runner && i < in.runner->policyCount(); ++i) {
        std::ostringstream csv, requests;
        write_steps_csv(csv, in.runner->data(i).steps());
        write_requests_csv(requests, in.runner->data(i).timings());
        const QString path = d.filePath(QStringLiteral("lab-steps-%1.csv").arg(in.runner->policy(i).name));
        const QString requests_path = d.filePath(QStringLiteral("lab-requests-%1.csv").arg(in.runner->policy(i).name));
        if (!writeFile(path, QByteArray::fromStdString(csv.str()), error)) return written;
        written << path;
        if (!writeFile(requests_path, QByteArray::fromStdString(requests.str()), error)) return written;
        written << requests_path;
        csvs << QFileInfo(path).fileName();
        request_csvs << QFileInfo(requests_path).fileName();
    }
    QString md = QStringLiteral("# Lorascope batching lab\n\nModel: `%1`\n\n## Policies\n\n").arg(in.model_dir);
    for (int i = 0; in.runner && i < in.runner->policyCount(); ++i)
        md += QStringLiteral("- **%1**: %2 (steps: `%3`, requests: `%4`)\n")
                  .arg(in.runner->policy(i).name, i < in.policy_descriptions.size() ? in.policy_descriptions[i] : QString(),
                       csvs.value(i), request_csvs.value(i));
    md += QStringLiteral("\n## Figures\n\nAs `lorascope-cli bench` defines them (engine/include/lorascope/bench_report.h).\n\n");
    if (in.runner) {
        const LatencyTargets& t = in.runner->goodputTargets();
        md += QStringLiteral("Goodput: requests finished within TTFT %1 and per token %2.\n\n")
                  .arg(t.ttft_ms > 0 ? QStringLiteral("%1 ms").arg(t.ttft_ms) : QStringLiteral("(any)"),
                       t.tpot_ms > 0 ? QStringLiteral("%1 ms").arg(t.tpot_ms) : QStringLiteral("(any)"));
    }
    if (in.summary) md += in.summary->toMarkdown();
    if (in.charts) md += QStringLiteral("\n## Charts\n\n![charts](lab-charts.png)\n");
    md += QStringLiteral("\n## Workload\n\n```json\n%1\n```\n").arg(in.workload_json);
    const QString report = d.filePath(QStringLiteral("lab-report.md"));
    if (!writeFile(report, md.toUtf8(), error)) return written;
    written << report;
    return written;
}

}  // namespace lorascope::ui
