#include "model/adapter_list_model.h"

#include <QBrush>
#include <QColor>
#include <QFileInfo>

#include "common/format.h"

namespace lorascope::ui {

AdapterListModel::AdapterListModel(QObject* parent) : QAbstractTableModel(parent) {}

int AdapterListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(entries_.size()); }
int AdapterListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AdapterListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ColName: return tr("Name");
    case ColRank: return tr("Rank");
    case ColAlpha: return tr("Alpha");
    case ColTargets: return tr("Targets");
    case ColSize: return tr("Size");
    case ColStatus: return tr("Status");
    default: return {};
    }
}

QVariant AdapterListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Entry& e = entries_[size_t(index.row())];
    const bool ready = e.state == State::Ready;
    QStringList targets;
    for (const auto& t : e.info.targets) targets << QString::fromStdString(t);
    QStringList warnings;
    for (const auto& w : e.info.warnings) warnings << QString::fromStdString(w);
    switch (role) {
    case NameRole: return e.name;
    case PathRole: return e.path;
    case ReadyRole: return ready;
    case Qt::ToolTipRole:
        if (e.state == State::Failed) return e.error;
        if (!warnings.isEmpty()) return warnings.join(QLatin1Char('\n'));
        return e.path;
    case Qt::ForegroundRole:
        if (index.column() == ColStatus && e.state == State::Failed) return QBrush(QColor(0xb0, 0x20, 0x20));
        if (index.column() == ColStatus && !warnings.isEmpty()) return QBrush(QColor(0xa0, 0x60, 0x00));
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case ColName: return e.name;
        case ColRank: return ready ? QVariant(qint64(e.info.rank)) : QVariant();
        case ColAlpha: return ready ? QVariant(e.info.alpha) : QVariant();
        case ColTargets: return targets.join(QStringLiteral(", "));
        case ColSize: return ready ? humanBytes(e.info.bytes) : QString();
        case ColStatus:
            switch (e.state) {
            case State::Loading: return tr("loading…");
            case State::Removing: return tr("removing…");
            case State::Failed: return tr("invalid: %1").arg(e.error);
            case State::Ready:
                if (!warnings.isEmpty()) return tr("ok, %n warning(s)", nullptr, int(warnings.size()));
                return e.info.loaded ? tr("ok") : tr("ok (evicted)");
            }
            return {};
        default: return {};
        }
    default: return {};
    }
}

QStringList AdapterListModel::readyNames() const {
    QStringList out;
    for (const auto& e : entries_)
        if (e.state == State::Ready) out << e.name;
    return out;
}

int AdapterListModel::rowOf(const QString& name) const {
    for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].name == name) return int(i);
    return -1;
}

QString AdapterListModel::uniqueNameFor(const QString& dir) const {
    QString base = QFileInfo(dir).fileName();
    if (base.isEmpty()) base = QStringLiteral("adapter");
    QString name = base;
    for (int n = 2; rowOf(name) >= 0; ++n) name = QStringLiteral("%1-%2").arg(base).arg(n);
    return name;
}

void AdapterListModel::changed(int row) {
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    Q_EMIT readyNamesChanged(readyNames());
}

void AdapterListModel::markLoading(const QString& name, const QString& path) {
    int row = rowOf(name);
    if (row < 0) {
        row = int(entries_.size());
        beginInsertRows({}, row, row);
        entries_.push_back({name, path, State::Loading, {}, {}});
        endInsertRows();
        return;
    }
    entries_[size_t(row)] = {name, path, State::Loading, {}, {}};
    changed(row);
}

void AdapterListModel::markLoaded(const AdapterInfo& info) {
    const QString name = QString::fromStdString(info.name);
    int row = rowOf(name);
    if (row < 0) {
        markLoading(name, QString::fromStdString(info.path));
        row = rowOf(name);
    }
    Entry& e = entries_[size_t(row)];
    e.state = State::Ready;
    e.info = info;
    if (!info.path.empty()) e.path = QString::fromStdString(info.path);
    e.error.clear();
    changed(row);
}

void AdapterListModel::markFailed(const QString& name, const QString& message) {
    const int row = rowOf(name);
    if (row < 0) return;
    entries_[size_t(row)].state = State::Failed;
    entries_[size_t(row)].error = message;
    changed(row);
}

void AdapterListModel::markRemoving(const QString& name) {
    const int row = rowOf(name);
    if (row < 0) return;
    entries_[size_t(row)].state = State::Removing;
    changed(row);
}

void AdapterListModel::remove(const QString& name) {
    const int row = rowOf(name);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    entries_.erase(entries_.begin() + row);
    endRemoveRows();
    Q_EMIT readyNamesChanged(readyNames());
}

void AdapterListModel::clear() {
    if (entries_.empty()) return;
    beginResetModel();
    entries_.clear();
    endResetModel();
    Q_EMIT readyNamesChanged({});
}

}  // namespace lorascope::ui
