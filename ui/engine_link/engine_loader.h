// Where the window's engines are built and torn down: the main engine (EngineBridge) and the
// lab's one engine per policy (LabRunner). The factory runs on a background worker, adapters are
// loaded into the new engine there, and the result comes back on the GUI thread; an engine that
// is let go is detached from its listener, cancelled and unpaused (a queued adapter unload must not
// wait on the requests of a paused engine) and destroyed on the worker, since its destructor joins
// the engine thread. Blocking calls on a live engine (adapter load/unload) run on the same worker,
// in order with loads and releases.
#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::ui {

class BackgroundWorker;

// Builds an engine for a model directory or server location; throws lorascope::Error on a bad
// one. The application passes lorascope::Engine::create behind the remote-backend switch
// (remote/remote_backend.h); tests pass a fake.
using EngineFactory = std::function<std::unique_ptr<Engine>(const EngineOptions&)>;

// (name, directory) of each adapter to load into a new engine.
using AdapterDirs = std::vector<std::pair<std::string, std::string>>;

class EngineLoader : public QObject {
    Q_OBJECT
public:
    // `done` gets the engine, or none and the error's text.
    using Done = std::function<void(std::shared_ptr<Engine> engine, const QString& error)>;

    explicit EngineLoader(EngineFactory factory, QObject* parent = nullptr);
    ~EngineLoader() override;   // finishes the running job; queued releases still destroy their engines

    // Builds an engine on the worker and loads `adapters` into it, then calls `done` on the GUI
    // thread, unless `wanted()` (asked there first) says a newer load or a cancel replaced this
    // one: the engine is then released instead. Nothing is called once the loader is gone.
    void load(EngineOptions options, AdapterDirs adapters, std::function<bool()> wanted, Done done);
    void release(std::shared_ptr<Engine> engine);
    void post(std::function<void()> job);

private:
    EngineFactory factory_;
    std::unique_ptr<BackgroundWorker> worker_;
};

}  // namespace lorascope::ui
