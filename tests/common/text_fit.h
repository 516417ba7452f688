// Whether every text a window shows is whole: each visible label, button, tab, combo box,
// spin box, placeholder, table cell and header, chart text and self-painted text measured with
// QFontMetrics against the room its widget gives it. Elided ("…", or Qt Charts' "...") or clipped
// text is a problem; so is a self-painted text drawn over another. A table cell may be an excerpt
// only where its tooltip carries the whole text (the board's prompt and output previews).
#pragma once

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractSpinBox>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QStyledItemDelegate>
#include <QTabBar>
#include <QTableView>
#include <QToolButton>
#include <QWidget>

#include <cmath>

#include "common/painted_text.h"

namespace lorascope::test {

class TextFit {
public:
    QStringList problems;

    // Checks every visible widget under (and including) `root`.
    void check(QWidget* root) {
        QList<QWidget*> widgets = root->findChildren<QWidget*>();
        widgets.prepend(root);
        for (QWidget* w : widgets)
            if (w->isVisible() && w->width() > 0) checkWidget(w);
    }

private:
    static QString describe(const QWidget* w) {
        QStringList chain;
        for (const QWidget* p = w; p && chain.size() < 3; p = p->parentWidget()) {
            QString name = QString::fromLatin1(p->metaObject()->className());
            if (!p->accessibleName().isEmpty()) name += QStringLiteral("[%1]").arg(p->accessibleName());
            else if (!p->objectName().isEmpty() && !p->objectName().startsWith(QLatin1String("qt_")))
                name += QStringLiteral("#%1").arg(p->objectName());
            chain << name;
        }
        return chain.join(QStringLiteral(" < "));
    }

    void need(const QWidget* w, const QString& what, const QString& text, int needed, int available) {
        if (needed <= available) return;
        QString shown = text.simplified();
        if (shown.size() > 60) shown = shown.left(57) + QStringLiteral("...");
        problems << QStringLiteral("%1: %2 \"%3\" needs %4 px, has %5").arg(describe(w), what, shown).arg(needed).arg(available);
    }

    static int pm(const QWidget* w, QStyle::PixelMetric m) { return w->style()->pixelMetric(m, nullptr, w); }

    static int widest_line(const QFontMetrics& fm, const QString& text) {
        int widest = 0;
        for (const QString& line : text.split(QLatin1Char('\n'))) widest = qMax(widest, fm.horizontalAdvance(line));
        return widest;
    }

    void checkWidget(QWidget* w) {
        if (auto* l = qobject_cast<QLabel*>(w)) return checkLabel(l);
        if (auto* b = qobject_cast<QAbstractButton*>(w)) return checkButton(b);
        if (auto* c = qobject_cast<QComboBox*>(w)) return checkCombo(c);
        if (auto* e = qobject_cast<QLineEdit*>(w)) return checkLineEdit(e);
        if (auto* g = qobject_cast<QGroupBox*>(w)) {
            need(g, QStringLiteral("group title"), g->title(), g->fontMetrics().horizontalAdvance(g->title()) + 16, g->width());
            return;
        }
        if (auto* t = qobject_cast<QTabBar*>(w)) return checkTabs(t);
        if (auto* d = qobject_cast<QDockWidget*>(w)) {
            // The title shares its bar with the float and close buttons.
            const int buttons = 2 * (pm(d, QStyle::PM_SmallIconSize) + 6) + 2 * pm(d, QStyle::PM_DockWidgetTitleMargin);
            need(d, QStringLiteral("dock title"), d->windowTitle(), d->fontMetrics().horizontalAdvance(d->windowTitle()) + buttons, d->width());
            return;
        }
        if (auto* v = qobject_cast<QAbstractItemView*>(w)) return checkView(v);
        if (auto* c = qobject_cast<QChartView*>(w)) return checkChart(c);
        if (auto* s = dynamic_cast<const ui::PaintedTextSource*>(w)) return checkPainted(w, s->paintedTexts());
    }

    void checkLabel(QLabel* l) {
        if (l->text().isEmpty()) return;
        if (l->wordWrap()) {
            need(l, QStringLiteral("wrapped label"), l->text(), l->heightForWidth(l->width()), l->height());
            return;
        }
        const QSize hint = l->sizeHint();
        need(l, QStringLiteral("label"), l->text(), hint.width(), l->width());
        need(l, QStringLiteral("label (height)"), l->text(), hint.height(), l->height());
    }

    void checkButton(QAbstractButton* b) {
        QString text = b->text();
        if (text.isEmpty()) return;
        text.remove(QRegularExpression(QStringLiteral("&(?!&)")));
        const QFontMetrics fm = b->fontMetrics();
        int needed = 0;
        if (qobject_cast<QCheckBox*>(b) || qobject_cast<QRadioButton*>(b)) {
            needed = b->sizeHint().width();
        } else if (auto* tool = qobject_cast<QToolButton*>(b)) {
            needed = tool->sizeHint().width();
        } else {
            // The label is drawn inside the frame (QCommonStyle's SE_PushButtonContents).
            auto* push = qobject_cast<QPushButton*>(b);
            needed = fm.horizontalAdvance(text) + 2 * pm(b, QStyle::PM_DefaultFrameWidth);
            if (push && push->autoDefault()) needed += 2 * pm(b, QStyle::PM_ButtonDefaultIndicator);
            if (!b->icon().isNull()) needed += b->iconSize().width() + 4;
            if (push && push->menu()) needed += pm(b, QStyle::PM_MenuButtonIndicator);
        }
        need(b, QStringLiteral("button"), text, needed, b->width());
    }

    void checkCombo(QComboBox* c) {
        if (c->isEditable() || c->currentText().isEmpty()) return;   // an editable one's line edit is a path field
        QStyleOptionComboBox opt;
        opt.initFrom(c);
        opt.editable = false;
        opt.frame = c->hasFrame();
        opt.currentText = c->currentText();
        opt.subControls = QStyle::SC_All;
        const QRect field = c->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, c);
        const int icon = c->itemIcon(c->currentIndex()).isNull() ? 0 : c->iconSize().width() + 4;
        need(c, QStringLiteral("combo box"), c->currentText(), c->fontMetrics().horizontalAdvance(c->currentText()) + icon, field.width());
    }

    // A spin box's value, or a placeholder while it shows; typed text in a line edit scrolls.
    void checkLineEdit(QLineEdit* e) {
        const bool spin = qobject_cast<QAbstractSpinBox*>(e->parentWidget()) != nullptr;
        const QString text = e->text().isEmpty() ? e->placeholderText() : (spin ? e->text() : QString());
        if (text.isEmpty()) return;
        const QMargins m = e->textMargins();
        const int frame = e->hasFrame() ? 2 * pm(e, QStyle::PM_DefaultFrameWidth) : 0;
        const int available = e->width() - frame - 2 * 2 /* QLineEdit's horizontal margin */ - m.left() - m.right();
        need(e, spin ? QStringLiteral("spin box") : QStringLiteral("placeholder"), text, e->fontMetrics().horizontalAdvance(text), available);
    }

    void checkTabs(QTabBar* t) {
        for (int i = 0; i < t->count(); ++i) {
            if (!t->isTabVisible(i)) continue;
            const int text = t->fontMetrics().size(Qt::TextShowMnemonic, t->tabText(i)).width();
            need(t, QStringLiteral("tab"), t->tabText(i), text + pm(t, QStyle::PM_TabBarTabHSpace), t->tabRect(i).width());
        }
    }

    static QString shownText(const QAbstractItemView* v, const QModelIndex& index) {
        const QVariant value = index.data(Qt::DisplayRole);
        if (auto* d = qobject_cast<QStyledItemDelegate*>(v->itemDelegateForIndex(index))) return d->displayText(value, v->locale());
        return value.toString();
    }

    void checkView(QAbstractItemView* v) {
        const QAbstractItemModel* m = v->model();
        if (!m) return;
        auto* table = qobject_cast<QTableView*>(v);
        if (table) checkHeaders(table);
        if (!table && !qobject_cast<QListView*>(v)) return;
        // The delegate's text margins (QCommonStyle: the focus frame's plus one, each side) and a
        // table's grid line, which each cell gives up.
        const int margin = 2 * (pm(v, QStyle::PM_FocusFrameHMargin) + 1) + (table && table->showGrid() ? 1 : 0);
        const int rows = m->rowCount(v->rootIndex());
        int first = table ? table->rowAt(0) : v->indexAt(QPoint(1, 1)).row();
        int last = table ? table->rowAt(v->viewport()->height() - 1) : v->indexAt(QPoint(1, v->viewport()->height() - 1)).row();
        if (first < 0) return;
        if (last < 0) last = rows - 1;
        const int columns = table ? m->columnCount(v->rootIndex()) : 1;
        for (int r = first; r <= last; ++r)
            for (int c = 0; c < columns; ++c) {
                if (table && (table->isColumnHidden(c) || table->columnViewportPosition(c) >= v->viewport()->width())) continue;
                const QModelIndex index = m->index(r, c, v->rootIndex());
                const QString text = shownText(v, index);
                if (text.isEmpty()) continue;
                // A preview column (the board's prompt and output) carries its whole text in the tooltip.
                if (!index.data(Qt::ToolTipRole).toString().isEmpty()) continue;
                const QVariant font = index.data(Qt::FontRole);
                const QFontMetricsF fm(font.isValid() ? font.value<QFont>() : v->font());
                int needed = int(std::ceil(fm.horizontalAdvance(text))) + margin;
                if (index.data(Qt::CheckStateRole).isValid())
                    needed += pm(v, QStyle::PM_IndicatorWidth) + pm(v, QStyle::PM_CheckBoxLabelSpacing) + 2;
                const int available = table ? table->columnWidth(c) : v->viewport()->width();
                need(v, QStringLiteral("cell (%1, %2)").arg(r).arg(c), text, needed, available);
            }
    }

    void checkHeaders(QTableView* t) {
        const int margin = 2 * pm(t, QStyle::PM_HeaderMargin);
        QHeaderView* h = t->horizontalHeader();
        if (h->isVisible())
            for (int c = 0; c < h->count(); ++c) {
                if (h->isSectionHidden(c) || h->sectionViewportPosition(c) >= h->width()) continue;
                const QString text = t->model()->headerData(c, Qt::Horizontal).toString();
                const QFontMetrics fm(h->font());
                need(h, QStringLiteral("column header"), text, widest_line(fm, text) + margin, h->sectionSize(c));
                need(h, QStringLiteral("column header (height)"), text, int(text.count(QLatin1Char('\n')) + 1) * fm.height(), h->height());
            }
        QHeaderView* vh = t->verticalHeader();
        if (vh->isVisible())
            for (int r = 0; r < vh->count(); ++r) {
                const QString text = t->model()->headerData(r, Qt::Vertical).toString();
                need(vh, QStringLiteral("row header"), text, widest_line(QFontMetrics(vh->font()), text) + margin, vh->width());
            }
    }

    // Qt Charts elides what does not fit its room with "..." (titles, axis labels and titles).
    void checkChart(QChartView* c) {
        if (!c->scene()) return;
        for (QGraphicsItem* item : c->scene()->items()) {
            if (!item->isVisible()) continue;
            QString text;
            if (auto* t = dynamic_cast<QGraphicsTextItem*>(item)) text = t->toPlainText();
            else if (auto* s = dynamic_cast<QGraphicsSimpleTextItem*>(item)) text = s->text();
            if (text.contains(QLatin1String("...")) || text.contains(QChar(0x2026)))
                problems << QStringLiteral("%1: chart text elided: \"%2\"").arg(describe(c), text);
        }
    }

    void checkPainted(QWidget* w, const std::vector<ui::PaintedText>& texts) {
        std::vector<QRect> drawn;
        for (const ui::PaintedText& t : texts) {
            const QFontMetrics fm(t.font);
            const QRect br = fm.boundingRect(t.rect, t.flags, t.text);
            need(w, QStringLiteral("painted text"), t.text, br.width(), t.rect.width());
            need(w, QStringLiteral("painted text (height)"), t.text, fm.height(), t.rect.height() + 1);
            if (!w->rect().contains(br)) problems << QStringLiteral("%1: painted text \"%2\" leaves the widget").arg(describe(w), t.text);
            for (size_t i = 0; i < drawn.size(); ++i)
                if (drawn[i].intersects(br))
                    problems << QStringLiteral("%1: painted text \"%2\" overlaps \"%3\"").arg(describe(w), t.text, texts[i].text);
            drawn.push_back(br);
        }
    }
};

// Every problem found under `root`, one per line (empty: every text is whole).
inline QStringList text_fit_problems(QWidget* root) {
    TextFit fit;
    fit.check(root);
    return fit.problems;
}

}  // namespace lorascope::test
