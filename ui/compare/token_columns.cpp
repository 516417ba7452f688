#include "compare/token_columns.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "compare/token_stream_view.h"

namespace lorascope::ui {

TokenColumns::TokenColumns(const QString& accessible_name, QWidget* parent) : QScrollArea(parent) {
    setWidgetResizable(true);
    setAccessibleName(accessible_name);
    host_ = new QWidget(this);
    layout_ = new QHBoxLayout(host_);
    layout_->setAlignment(Qt::AlignTop);
    setWidget(host_);
}

TokenColumns::Column& TokenColumns::add(Ticket ticket, const QString& title, const QString& view_name) {
    Column c;
    c.ticket = ticket;
    auto* frame = new QFrame(host_);
    frame->setFrameShape(QFrame::StyledPanel);
    auto* v = new QVBoxLayout(frame);
    c.title = new QLabel(QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped()), frame);
    c.stats = new QLabel(frame);
    // Wrapped, so that a column's width is not its status line's: four columns (the demo's base
    // and three adapters) fit the default 1280 px window.
    c.title->setWordWrap(true);
    c.stats->setWordWrap(true);
    c.view = new TokenStreamView(frame);
    c.view->setAccessibleName(view_name);
    v->addWidget(c.title);
    v->addWidget(c.stats);
    v->addWidget(c.view);
    v->addStretch(1);
    c.frame = frame;
    layout_->addWidget(frame, 1);
    columns_.push_back(c);
    return columns_.back();
}

void TokenColumns::clear() {
    for (auto& c : columns_) delete c.frame;
    columns_.clear();
}

}  // namespace lorascope::ui
