// The user's Hugging Face hub cache: models--<org>--<name>/snapshots/<revision> directories,
// which are ordinary checkpoint directories we can load in place.
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>
#include <vector>

class QTreeWidget;

namespace lorascope::ui {

struct HfCachedSnapshot {
    QString repo_id;        // "org/name"
    QString revision;       // snapshot directory name (a commit hash)
    QStringList refs;       // refs pointing at it ("main", ...)
    QString dir;
    bool has_config = false;   // config.json present (adapters have adapter_config.json instead)
    bool is_adapter = false;
};

// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
QString hfHubCacheDir();
std::vector<HfCachedSnapshot> scanHfHubCache(const QString& hub_dir);

class HfCachePickerDialog : public QDialog {
    Q_OBJECT
public:
    explicit HfCachePickerDialog(const QString& hub_dir, QWidget* parent = nullptr);
    QString selectedDirectory() const;
    int snapshotCount() const { return int(snapshots_.size()); }

private:
    std::vector<HfCachedSnapshot> snapshots_;
    QTreeWidget* tree_ = nullptr;
};

}  // namespace lorascope::ui
