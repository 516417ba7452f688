#include "model/hf_cache.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace lorascope::ui {

QString hfHubCacheDir() {
    const QString hub = qEnvironmentVariable("HF_HUB_CACHE");
    if (!hub.isEmpty()) return hub;
    const QString home = qEnvironmentVariable("HF_HOME");
    if (!home.isEmpty()) return QDir(home).filePath(QStringLiteral("hub"));
    const QString xdg = qEnvironmentVariable("XDG_CACHE_HOME");
    if (!xdg.isEmpty()) return QDir(xdg).filePath(QStringLiteral("huggingface/hub"));
    return QDir::home().filePath(QStringLiteral(".cache/huggingface/hub"));
}

std::vector<HfCachedSnapshot> scanHfHubCache(const QString& hub_dir) {
    std::vector<HfCachedSnapshot> out;
    const QDir hub(hub_dir);
    const QStringList repos = hub.entryList({QStringLiteral("models--*")}, QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
    for (const QString& repo : repos) {
        const QDir repo_dir(hub.filePath(repo));
        // "models--org--name" -> "org/name"; names themselves never contain "--" at the edges.
        QString repo_id = repo.mid(int(qstrlen("models--")));
        repo_id.replace(QStringLiteral("--"), QStringLiteral("/"));
        QMap<QString, QStringList> refs_of;
        const QDir refs(repo_dir.filePath(QStringLiteral("refs")));
        for (const QString& ref : refs.entryList(QDir::Files)) {
            QFile f(refs.filePath(ref));
            if (f.open(QIODevice::ReadOnly)) refs_of[QString::fromUtf8(f.readAll()).trimmed()] << ref;
        }
        const QDir snapshots(repo_dir.filePath(QStringLiteral("snapshots")));
        for (const QString& rev : snapshots.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            HfCachedSnapshot s;
            s.repo_id = repo_id;
            s.revision = rev;
            s.refs = refs_of.value(rev);
            s.dir = snapshots.filePath(rev);
            s.has_config = QFileInfo::exists(QDir(s.dir).filePath(QStringLiteral("config.json")));
            s.is_adapter = QFileInfo::exists(QDir(s.dir).filePath(QStringLiteral("adapter_config.json")));
            out.push_back(s);
        }
    }
    return out;
}

HfCachePickerDialog::HfCachePickerDialog(const QString& hub_dir, QWidget* parent)
    : QDialog(parent), snapshots_(scanHfHubCache(hub_dir)) {
    setWindowTitle(tr("Models in the Hugging Face cache"));
    auto* layout = new QVBoxLayout(this);
    auto* where = new QLabel(tr("Cache: %1").arg(hub_dir), this);
    where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(where);
    tree_ = new QTreeWidget(this);
    tree_->setAccessibleName(tr("Cached models and their snapshot revisions"));
    tree_->setHeaderLabels({tr("Model / revision"), tr("Refs"), tr("Kind")});
    tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    QMap<QString, QTreeWidgetItem*> repo_items;
    for (size_t i = 0; i < snapshots_.size(); ++i) {
        const auto& s = snapshots_[i];
        QTreeWidgetItem*& parent_item = repo_items[s.repo_id];
        if (!parent_item) {
            parent_item = new QTreeWidgetItem(tree_, {s.repo_id});
            parent_item->setFlags(Qt::ItemIsEnabled);
        }
        auto* item = new QTreeWidgetItem(parent_item, {s.revision.left(12), s.refs.join(QStringLiteral(", ")),
                                                       s.is_adapter ? tr("adapter") : s.has_config ? tr("model") : tr("incomplete")});
        item->setData(0, Qt::UserRole, s.dir);
        item->setToolTip(0, s.dir);
    }
    tree_->expandAll();
    if (snapshots_.empty()) new QTreeWidgetItem(tree_, {tr("No models found")});
    layout->addWidget(tree_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(tree_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        if (!item->data(0, Qt::UserRole).toString().isEmpty()) accept();
    });
    layout->addWidget(buttons);
    resize(640, 420);
}

QString HfCachePickerDialog::selectedDirectory() const {
    const QTreeWidgetItem* item = tree_->currentItem();
    return item ? item->data(0, Qt::UserRole).toString() : QString();
}

}  // namespace lorascope::ui
