#include "engine_link/engine_loader.h"

#include <QMetaObject>
#include <exception>

#include "engine_link/background_worker.h"

namespace lorascope::ui {

EngineLoader::EngineLoader(EngineFactory factory, QObject* parent)
    : QObject(parent), factory_(std::move(factory)), worker_(std::make_unique<BackgroundWorker>()) {}

EngineLoader::~EngineLoader() = default;

void EngineLoader::load(EngineOptions options, AdapterDirs adapters, std::function<bool()> wanted, Done done) {
    worker_->post([this, options = std::move(options), adapters = std::move(adapters), wanted = std::move(wanted),
                   done = std::move(done), factory = factory_]() mutable {
        std::shared_ptr<Engine> engine;
        QString error;
        try {
            engine = std::shared_ptr<Engine>(factory(options));
            if (!engine) throw std::runtime_error(options.model_dir + ": the engine factory returned nothing");
            for (const auto& [name, dir] : adapters) engine->load_adapter(name, dir);
        } catch (const std::exception& e) {
            engine.reset();
            error = QString::fromStdString(e.what());
        } catch (...) {
            engine.reset();
            error = QString::fromStdString(options.model_dir) + QStringLiteral(": unknown error while loading");
        }
        // Queued to the loader: Qt drops the call if the loader is gone by then.
        QMetaObject::invokeMethod(this, [this, engine = std::move(engine), error, wanted = std::move(wanted),
                                         done = std::move(done)]() mutable {
            if (!wanted()) {
                if (engine) release(std::move(engine));
                return;
            }
            done(std::move(engine), error);
        }, Qt::QueuedConnection);
    });
}

void EngineLoader::release(std::shared_ptr<Engine> engine) {
    if (!engine) return;
    engine->set_stats_listener({});
    engine->cancel_all();
    engine->set_paused(false);
    // Cancelled finishes still reach their sinks from the engine thread before it stops.
    worker_->post([e = std::move(engine)]() mutable { e.reset(); });
}

void EngineLoader::post(std::function<void()> job) { worker_->post(std::move(job)); }

}  // namespace lorascope::ui
