// Side-by-side token columns in a scroll area, each a framed title, a status line and a
// TokenStreamView: the comparison's generations and the surprise view's scored texts.
#pragma once

#include <QScrollArea>
#include <vector>

#include "engine_link/bridge_events.h"

class QHBoxLayout;
class QLabel;

namespace lorascope::ui {

class TokenStreamView;

class TokenColumns : public QScrollArea {
    Q_OBJECT
public:
    struct Column {
        Ticket ticket = 0;
        QWidget* frame = nullptr;
        QLabel* title = nullptr;
        QLabel* stats = nullptr;
        TokenStreamView* view = nullptr;
    };
    TokenColumns(const QString& accessible_name, QWidget* parent = nullptr);
    // A new column at the right: `title` in bold, the view named `view_name` for screen readers.
    Column& add(Ticket ticket, const QString& title, const QString& view_name);
    void clear();
    static void setTitle(Column& column, const QString& title);   // bold, breakable after commas
    std::vector<Column>& columns() { return columns_; }
    const std::vector<Column>& columns() const { return columns_; }
    int count() const { return int(columns_.size()); }
    const Column& at(int i) const { return columns_.at(size_t(i)); }

private:
    QWidget* host_ = nullptr;
    QHBoxLayout* layout_ = nullptr;
    std::vector<Column> columns_;
};

}  // namespace lorascope::ui
