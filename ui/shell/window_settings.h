// What the window remembers between runs (QSettings): recent model and adapter directories, the
// Model dock's device, dtype and threads, the parameters the person changed, and the window's
// geometry and dock layout.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QVariantMap>
#include <memory>

class QSettings;

namespace lorascope::ui {

class WindowSettings {
public:
    explicit WindowSettings(const QString& file);   // empty: the platform's QSettings location
    ~WindowSettings();

    QStringList recentModels() const;
    QStringList recentAdapters() const;
    // Moves `dir` to the front of its list (at most 10 kept); nothing for an empty dir.
    void rememberModel(const QString& dir);
    void rememberAdapter(const QString& dir);

    struct ModelChoice {
        QString device, dtype;
        int threads = 0;
    };
    ModelChoice modelChoice() const;
    QVariantMap changedParams() const;
    QByteArray geometry() const;
    QByteArray dockState() const;
    // Written at once (sync) when the window closes.
    void save(const ModelChoice& model, const QVariantMap& changed_params, const QByteArray& geometry,
              const QByteArray& dock_state);

private:
    void remember(const QString& key, const QString& dir);
    std::unique_ptr<QSettings> settings_;
};

}  // namespace lorascope::ui
