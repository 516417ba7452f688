// Runs one workload under several policies, one after the other, each on an engine of its own
// (built by an EngineLoader with the window's engine factory, with the loaded model's directory
// and adapters and the policy's batching options). The engine library's WorkloadRun
// submits and records (the same code as `lorascope-cli bench`); its events are queued on the
// engine's threads and applied to the policy's LabRunData on the GUI thread, one batch per tick.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine_link/engine_loader.h"
#include "lab/lab_run_data.h"
#include "lorascope/engine.h"

namespace lorascope {
class WorkloadRun;
}

namespace lorascope::ui {

struct LabPolicy {
    QString name;                // "A", "B"
    EngineOptions options;       // model_dir, device, threads and adapters come from the window
};

class LabRunner : public QObject {
    Q_OBJECT
public:
    explicit LabRunner(EngineFactory factory, QObject* parent = nullptr);
    ~LabRunner() override;

    // Starts the policies in order on `requests` (already built for the model's vocabulary).
    // `adapters`: (name, directory) loaded into every policy's engine first.
    void start(std::vector<LabPolicy> policies, std::vector<Request> requests, std::vector<double> arrivals_s,
               AdapterDirs adapters);
    void cancel();
    bool isRunning() const { return running_; }
    int currentPolicy() const { return current_; }

    void setMinStepMs(int ms);
    int minStepMs() const { return min_step_ms_; }
    void setPaused(bool paused);
    bool isPaused() const { return paused_; }
    void stepOnce();

    // What goodput counts as good (the bench's --goodput-ttft-ms / --goodput-tpot-ms): finished
    // policies are recounted at once, the running one and later ones are counted with these.
    void setGoodputTargets(const LatencyTargets& targets);
    const LatencyTargets& goodputTargets() const { return goodput_; }

    int policyCount() const { return int(policies_.size()); }
    const LabPolicy& policy(int i) const { return policies_.at(size_t(i)); }
    const LabRunData& data(int i) const { return data_.at(size_t(i)); }
    // A finished policy's figures, the running one's so far, none for one not started.
    std::optional<BenchFigures> figures(int i) const;
    void drainNow();

Q_SIGNALS:
    void started();
    void policyStarted(int policy);
    void updated(int policy);
    void policyFinished(int policy);
    void finished();          // every policy ran (or the run was cancelled)
    void failed(const QString& message);

private:
    struct Queue;
    void startPolicy(int index);
    void onEngineReady(std::shared_ptr<Engine> engine);
    void finishPolicy();
    void releaseEngine();
    void onTick();

    EngineLoader loader_;
    std::vector<LabPolicy> policies_;
    std::vector<LabRunData> data_;
    std::vector<Request> requests_;
    std::vector<double> arrivals_s_;
    AdapterDirs adapters_;
    std::shared_ptr<Engine> engine_;
    std::unique_ptr<WorkloadRun> run_;
    std::shared_ptr<Queue> queue_;
    uint64_t generation_ = 0;
    int current_ = -1;
    bool running_ = false;
    bool paused_ = false;
    int min_step_ms_ = 0;
    LatencyTargets goodput_;
    QTimer tick_;
};

}  // namespace lorascope::ui
