// The adapters list with add (directory picker, recent) and remove.
#pragma once

#include <QStringList>
#include <QWidget>

class QMenu;
class QPushButton;
class QTableView;
class QToolButton;

namespace lorascope::ui {

class AdapterListModel;

class AdaptersPanel : public QWidget {
    Q_OBJECT
public:
    explicit AdaptersPanel(AdapterListModel* model, QWidget* parent = nullptr);
    void setRecentAdapters(const QStringList& dirs);
    QStringList selectedNames() const;
    QTableView* view() const { return view_; }

Q_SIGNALS:
    void addRequested(const QString& dir);   // empty: ask for a directory
    void removeRequested(const QStringList& names);

private:
    AdapterListModel* model_;
    QTableView* view_ = nullptr;
    QToolButton* add_ = nullptr;
    QPushButton* remove_ = nullptr;
    QMenu* recent_ = nullptr;
};

}  // namespace lorascope::ui
