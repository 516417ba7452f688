#include "shell/window_settings.h"

#include <QSettings>

namespace lorascope::ui {

namespace {
constexpr int kRecentMax = 10;
const QString kRecentModels = QStringLiteral("recent/models");
const QString kRecentAdapters = QStringLiteral("recent/adapters");
}  // namespace

WindowSettings::WindowSettings(const QString& file)
    : settings_(file.isEmpty() ? std::make_unique<QSettings>() : std::make_unique<QSettings>(file, QSettings::IniFormat)) {}

WindowSettings::~WindowSettings() = default;

QStringList WindowSettings::recentModels() const { return settings_->value(kRecentModels).toStringList(); }
QStringList WindowSettings::recentAdapters() const { return settings_->value(kRecentAdapters).toStringList(); }
void WindowSettings::rememberModel(const QString& dir) { remember(kRecentModels, dir); }
void WindowSettings::rememberAdapter(const QString& dir) { remember(kRecentAdapters, dir); }

void WindowSettings::remember(const QString& key, const QString& dir) {
    if (dir.isEmpty()) return;
    QStringList list = settings_->value(key).toStringList();
    list.removeAll(dir);
    list.prepend(dir);
    while (list.size() > kRecentMax) list.removeLast();
    settings_->setValue(key, list);
}

WindowSettings::ModelChoice WindowSettings::modelChoice() const {
    ModelChoice c;
    c.device = settings_->value(QStringLiteral("model/device")).toString();
    c.dtype = settings_->value(QStringLiteral("model/dtype")).toString();
    c.threads = settings_->value(QStringLiteral("model/threads"), 0).toInt();
    return c;
}

QVariantMap WindowSettings::changedParams() const { return settings_->value(QStringLiteral("params")).toMap(); }
QByteArray WindowSettings::geometry() const { return settings_->value(QStringLiteral("window/geometry")).toByteArray(); }
QByteArray WindowSettings::dockState() const { return settings_->value(QStringLiteral("window/state")).toByteArray(); }

void WindowSettings::save(const ModelChoice& model, const QVariantMap& changed_params, const QByteArray& geometry,
                          const QByteArray& dock_state) {
    settings_->setValue(QStringLiteral("model/device"), model.device);
    settings_->setValue(QStringLiteral("model/dtype"), model.dtype);
    settings_->setValue(QStringLiteral("model/threads"), model.threads);
    settings_->setValue(QStringLiteral("params"), changed_params);
    settings_->setValue(QStringLiteral("window/geometry"), geometry);
    settings_->setValue(QStringLiteral("window/state"), dock_state);
    settings_->sync();
}

}  // namespace lorascope::ui
