// The window's link to its engine (the one the Model dock loads; the lab runs engines of its own
// through the same EngineLoader). Engine threads push events into a mutex-protected queue; a
// GUI-thread timer drains it and emits one batched signal per tick, so item models change on the
// GUI thread only. Blocking calls (load, adapters, teardown) run on the loader's worker.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine_link/bridge_events.h"
#include "engine_link/engine_loader.h"
#include "lorascope/engine.h"

namespace lorascope::ui {

class EventQueue;

class EngineBridge : public QObject {
    Q_OBJECT
public:
    explicit EngineBridge(EngineFactory factory, QObject* parent = nullptr);
    ~EngineBridge() override;

    bool hasEngine() const { return engine_ != nullptr; }
    bool isLoading() const { return loading_ != nullptr; }
    QString modelDir() const { return model_dir_; }
    const EngineOptions& engineOptions() const { return engine_options_; }
    // Valid while hasEngine(); they belong to the engine.
    const ModelConfig* modelConfig() const;
    const GenerationConfig* generationConfig() const;
    std::vector<AdapterInfo> adapters() const;
    // The model's chat templates (the chat view renders prompts with them); null without an
    // engine, for a model without one, or for a remote server (it renders its own).
    const ModelChatTemplates* chatTemplates() const { return engine_ ? engine_->chat_templates() : nullptr; }

    // Off the GUI thread; ends in loadFinished, loadFailed or (after cancelLoad) loadCancelled.
    void loadModel(const EngineOptions& options);
    // The load stops at the next checkpoint tensor it reads (EngineOptions::load_progress) and is
    // discarded; loadCancelled at once.
    void cancelLoad();

    // Returns the ticket that all events of this request carry, or 0 (and errorOccurred)
    // when no model is loaded.
    Ticket submit(Request request, int compare_group = 0);
    // Between holdSubmissions(true) and (false) the engine waits at its next step boundary, so
    // requests submitted in between join the batch in the same step (a comparison's columns then
    // decode together). No effect while the person has paused the engine: it holds them anyway.
    void holdSubmissions(bool hold);
    void cancel(Ticket ticket);
    void cancelAll();
    bool isActive(Ticket ticket) const;

    void loadAdapter(const QString& name, const QString& dir);
    void unloadAdapter(const QString& name);

    void setPaused(bool paused);
    bool isPaused() const { return paused_; }
    void stepOnce();

    void setDrainIntervalMs(int ms);
    int drainIntervalMs() const { return drain_timer_.interval(); }
    // Drains immediately (tests, and before exporting results).
    void drainNow();

Q_SIGNALS:
    void loadStarted(const QString& dir);
    void loadFinished(const QString& dir);
    void loadFailed(const QString& dir, const QString& message);
    void loadCancelled(const QString& dir);
    void loadProgress(qint64 tensors_read, qint64 tensors_total);   // while loading, at most once a drain tick
    void requestSubmitted(const lorascope::ui::SubmittedRequest& request);
    void drained(const lorascope::ui::DrainBatch& batch);
    void adapterLoaded(const lorascope::AdapterInfo& info);
    void adapterFailed(const QString& name, const QString& dir, const QString& message);
    void adapterUnloaded(const QString& name);
    void pausedChanged(bool paused);
    void errorOccurred(const QString& title, const QString& message);

private:
    struct LoadJob;
    void adoptEngine(std::shared_ptr<Engine> engine, const EngineOptions& options);
    void releaseEngine();
    void onDrainTimer();

    std::shared_ptr<EventQueue> queue_;
    EngineLoader loader_;
    std::shared_ptr<Engine> engine_;
    EngineOptions engine_options_;
    QString model_dir_;
    uint64_t engine_generation_ = 0;
    std::shared_ptr<LoadJob> loading_;
    Ticket next_ticket_ = 1;
    std::unordered_map<Ticket, RequestId> engine_ids_;     // tickets of the current engine
    std::unordered_map<RequestId, Ticket> tickets_;        // and back, for step statistics
    std::unordered_map<Ticket, QString> adapter_of_;       // for timeline colouring
    std::unordered_map<Ticket, bool> active_;
    std::vector<Ticket> retiring_;                         // finished: erased at the next drain
    bool paused_ = false;
    QTimer drain_timer_;
};

}  // namespace lorascope::ui
