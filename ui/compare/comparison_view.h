// Side-by-side adapter comparison: one prompt fanned out to adapters (and the base), one column
// per request, all streaming together; differences to the reference column highlighted; a blend
// column for a weighted merge of adapters (compare/blend_panel.h); more pages (the surprise view).
#pragma once

#include <QStringList>
#include <QWidget>
#include <map>
#include <vector>

#include "engine_link/bridge_events.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QTabWidget;

namespace lorascope::ui {

class BlendPanel;
class RequestTableModel;
struct RequestRecord;
class TokenColumns;
class TokenStreamView;

class ComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonView(RequestTableModel* model, QWidget* parent = nullptr);
    void showGroup(int compare_group);
    int currentGroup() const { return group_; }
    int columnCount() const;
    TokenStreamView* columnView(int i) const;
    QString columnTitle(int i) const;
    // More pages beside the generations (the surprise view): the compare area's sub-tabs.
    void addPage(QWidget* page, const QString& title);
    void showPage(QWidget* page);
    void showGenerations();
    BlendPanel* blendPanel() const { return blend_; }
    QCheckBox* blendToggle() const { return blend_toggle_; }
    // The request now generating comparison `compare_group`'s blend column; an earlier one leaves it.
    void setBlendTicket(int compare_group, Ticket ticket);

public Q_SLOTS:
    void refresh();
    void setAdapters(const QStringList& names);   // the ready adapters the blend may merge

Q_SIGNALS:
    // An alternative clicked in a column's popup: fork that column's request at `position`.
    // The blend panel's merge changed while comparison `compare_group` is shown: regenerate its blend column.
    void blendRequested(int compare_group, const lorascope::AdapterMerge& merge);
    void forkRequested(lorascope::ui::Ticket ticket, int position, const lorascope::TokenAlternative& choice);

protected:
    void changeEvent(QEvent* e) override;

private:
    void rebuildColumns();
    static QString titleOf(const RequestRecord& r);
    void refreshLegend();
    void refreshGroups();
    RequestTableModel* model_;
    QTabWidget* pages_ = nullptr;
    BlendPanel* blend_ = nullptr;
    QCheckBox* blend_toggle_ = nullptr;
    std::map<int, Ticket> blend_tickets_;
    QComboBox* groups_ = nullptr;
    QLabel* prompt_ = nullptr;
    QLabel* legend_ = nullptr;
    TokenColumns* columns_ = nullptr;
    int group_ = 0;
};

}  // namespace lorascope::ui
