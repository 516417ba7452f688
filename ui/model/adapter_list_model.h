// Adapters the user added: rank, targets, size and whether the engine accepted them.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::ui {

class AdapterListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColName, ColRank, ColAlpha, ColTargets, ColSize, ColStatus, ColumnCount };
    enum class State { Loading, Ready, Failed, Removing };
    enum Role { NameRole = Qt::UserRole + 1, PathRole, ReadyRole };

    struct Entry {
        QString name;
        QString path;
        State state = State::Loading;
        AdapterInfo info;
        QString error;
    };

    explicit AdapterListModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const std::vector<Entry>& entries() const { return entries_; }
    QStringList readyNames() const;
    int rowOf(const QString& name) const;
    // A name not yet used, derived from the directory's name.
    QString uniqueNameFor(const QString& dir) const;

    void markLoading(const QString& name, const QString& path);
    void markLoaded(const AdapterInfo& info);
    void markFailed(const QString& name, const QString& message);
    void markRemoving(const QString& name);
    void remove(const QString& name);
    void clear();

Q_SIGNALS:
    void readyNamesChanged(const QStringList& names);

private:
    void changed(int row);
    std::vector<Entry> entries_;
};

}  // namespace lorascope::ui
