#include "model/adapters_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMenu>
#include <QPushButton>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "model/adapter_list_model.h"

namespace lorascope::ui {

AdaptersPanel::AdaptersPanel(AdapterListModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    auto* layout = new QVBoxLayout(this);
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->setAccessibleName(tr("Loaded LoRA adapters"));
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->setWordWrap(false);
    // Targets (which linears an adapter changes) right after the name, as wide as its text: behind
    // rank and alpha it was a sliver at the dock's default width. Name, rank and alpha as wide as
    // their header or values in the font in use: a fixed 40 px clipped "Rank" under GNOME's 11 pt
    // font, and a fixed 90 px name pushed "Rank" past the dock's edge.
    view_->horizontalHeader()->moveSection(AdapterListModel::ColTargets, 1);
    auto fit_columns = [this] {
        for (int c : {AdapterListModel::ColName, AdapterListModel::ColTargets, AdapterListModel::ColRank, AdapterListModel::ColAlpha})
            view_->resizeColumnToContents(c);
    };
    fit_columns();
    connect(model_, &QAbstractItemModel::rowsInserted, this, fit_columns);
    connect(model_, &QAbstractItemModel::dataChanged, this, fit_columns);
    connect(model_, &QAbstractItemModel::modelReset, this, fit_columns);
    layout->addWidget(view_, 1);
    auto* row = new QHBoxLayout;
    add_ = new QToolButton(this);
    add_->setText(tr("Add adapter…"));
    add_->setAccessibleName(tr("Add a LoRA adapter directory"));
    add_->setPopupMode(QToolButton::MenuButtonPopup);
    recent_ = new QMenu(add_);
    add_->setMenu(recent_);
    remove_ = new QPushButton(tr("Remove"), this);
    remove_->setAccessibleName(tr("Remove the selected adapters"));
    remove_->setEnabled(false);
    row->addWidget(add_);
    row->addWidget(remove_);
    row->addStretch(1);
    layout->addLayout(row);
    connect(add_, &QToolButton::clicked, this, [this] { Q_EMIT addRequested(QString()); });
    connect(remove_, &QPushButton::clicked, this, [this] { Q_EMIT removeRequested(selectedNames()); });
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { remove_->setEnabled(!selectedNames().isEmpty()); });
    setRecentAdapters({});
}

void AdaptersPanel::setRecentAdapters(const QStringList& dirs) {
    recent_->clear();
    if (dirs.isEmpty()) recent_->addAction(tr("(no recent adapters)"))->setEnabled(false);
    for (const QString& dir : dirs)
        recent_->addAction(dir, this, [this, dir] { Q_EMIT addRequested(dir); });
}

QStringList AdaptersPanel::selectedNames() const {
    QStringList names;
    for (const QModelIndex& index : view_->selectionModel()->selectedRows())
        names << index.data(AdapterListModel::NameRole).toString();
    return names;
}

}  // namespace lorascope::ui
