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
    c.title = new QLabel(frame);
    setTitle(c, title);
    c.stats = new QLabel(frame);
    // Wrapped, so that a column's width is not its status line's: four columns (the demo's base
    // and three adapters) fit the default 1280 px window.
    c.title->setWordWrap(true);
    c.stats->setWordWrap(true);
    // A blend's title (a merge name) and its errors have long runs without spaces: such a run must
    // not widen its column at the others' expense (a failed blend squeezed four columns to ~80 px).
    for (QLabel* label : {c.title, c.stats}) label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
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

void TokenColumns::setTitle(Column& column, const QString& title) {
    // Break opportunities after a merge name's commas.
    const QString html =
        QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped().replace(QLatin1Char(','), QStringLiteral(",&#8203;")));
    if (column.title->text() != html) column.title->setText(html);
}

void TokenColumns::clear() {
    for (auto& c : columns_) delete c.frame;
    columns_.clear();
}

}  // namespace lorascope::ui
