// The window at 1280x800 with every dock open, as a new user first sees it: in each tab, before
// and after a lab run, every text is whole (tests/common/text_fit.h measures each label, button,
// tab, cell, header, chart text and self-painted text against its widget) and the window's
// minimum size fits the screen. The board holds more than 1,000 requests (four-digit ids), a
// cancelled one and a 32-row batch (the timeline's row labels); the lab runs its preset on the
// fake engine. Under GNOME's font (what Qt's GTK 3 platform theme sets) the minimum size still
// fits, and every text (chart axes and table headers among them) is whole.
#include <QApplication>
#include <QDockWidget>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "fake_engine.h"
#include "lab/lab_policy_editor.h"
#include "lab/lab_runner.h"
#include "lab/lab_view.h"
#include "model/adapter_list_model.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "shell/main_window.h"
#include "text_fit.h"
#include "ui_test_support.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;

class WindowFitTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<MainWindow> window_;

    // What fits the 1280x800 screen below a window manager's title bar (openbox: 22 px).
    static constexpr int kWidth = 1280, kHeight = 770;

    void settle() {
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
        window_->bridge()->drainNow();
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    }

    // Every text in each tab, and the minimum size; `when` names the moment in the failure.
    void checkEveryTab(const QString& when) {
        QStringList problems;
        const QSize minimum = window_->minimumSizeHint();
        if (minimum.width() > kWidth || minimum.height() > kHeight)
            problems << QStringLiteral("the window's minimum size %1x%2 exceeds %3x%4")
                            .arg(minimum.width()).arg(minimum.height()).arg(kWidth).arg(kHeight);
        for (MainWindow::Tab tab : {MainWindow::Tab::Requests, MainWindow::Tab::Compare, MainWindow::Tab::Batching, MainWindow::Tab::Lab}) {
            window_->showTab(tab);
            settle();
            if (window_->width() > kWidth) problems << QStringLiteral("tab %1: the window grew to %2 px").arg(int(tab)).arg(window_->width());
            for (const QString& p : test::text_fit_problems(window_.get())) problems << QStringLiteral("tab %1: %2").arg(int(tab)).arg(p);
            // The pages of the tab's own tab widgets (the inspector's step table, the lab's requests).
            for (QTabWidget* inner : window_->findChildren<QTabWidget*>()) {
                if (!inner->isVisible() || inner->accessibleName() == QLatin1String("Views")) continue;
                const int shown = inner->currentIndex();
                for (int page = 0; page < inner->count(); ++page) {
                    if (page == shown) continue;
                    inner->setCurrentIndex(page);
                    settle();
                    for (const QString& p : test::text_fit_problems(inner))
                        problems << QStringLiteral("tab %1, page %2: %3").arg(int(tab)).arg(inner->tabText(page), p);
                }
                inner->setCurrentIndex(shown);
            }
        }
        window_->showTab(MainWindow::Tab::Requests);
        problems.removeDuplicates();
        for (const QString& p : problems) qWarning("%s: %s", qPrintable(when), qPrintable(p));
        QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1: %2 texts do not fit (listed above)").arg(when).arg(problems.size())));
    }

    std::unique_ptr<MainWindow> makeWindow(const QString& settings_file) {
        MainWindowOptions o;
        test::FakeEngineSettings settings;
        settings.step_delay_ms = 1;
        settings.default_new_tokens = 3;
        o.engine_factory = [settings](const EngineOptions& e) { return test::FakeEngine::create(e, settings); };
        o.settings_file = dir_.filePath(settings_file);
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->resize(1280, 800);
        w->show();
        return w;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        const QString model = test::makeFakeModelDir(dir_.path(), QStringLiteral("tiny-t5"));
        window_ = makeWindow(QStringLiteral("settings.ini"));
        QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
        for (QDockWidget* d : window_->findChildren<QDockWidget*>()) QVERIFY2(d->isVisible(), qPrintable(d->windowTitle()));
        QVERIFY(test::load_through_panel(*window_, model, 5000));
        for (const char* name : {"lora-alpha", "lora-beta"}) window_->addAdapter(test::makeFakeAdapterDir(dir_.path(), QLatin1String(name)));
        QTRY_COMPARE_WITH_TIMEOUT(window_->adapterModel()->readyNames().size(), 2, 5000);
    }

    // The lab's preset run on the fake engine, its results drawn.
    void runTheLab() {
        window_->showTab(MainWindow::Tab::Lab);
        LabView* lab = window_->labView();
        lab->usePreset();
        QVERIFY(lab->run());
        QTRY_VERIFY_WITH_TIMEOUT(!lab->runner()->isRunning(), 60000);
        lab->refreshNow();
    }

    void everyTextFitsBeforeALabRun() {
        // A comparison over the base and both adapters, then 1,040 prompts (ids past 1000), the
        // first 32 of them in one batch.
        window_->composer()->setSelectedTargets({QString(), QStringLiteral("lora-alpha"), QStringLiteral("lora-beta")});
        window_->composer()->setText(QStringLiteral("translate English to German: The house is wonderful."));
        QVERIFY(window_->compareTargets() > 0);
        window_->composer()->setSelectedTargets({QString()});
        QStringList lines;
        for (int i = 0; i < 1040; ++i) lines << QStringLiteral("prompt number %1").arg(i);
        window_->composer()->setPrompts(lines);
        QCOMPARE(window_->submitPrompts().size(), size_t(1040));
        const Ticket last = window_->requestModel()->recordAt(window_->requestModel()->rowCount() - 1).ticket;
        window_->bridge()->cancel(last);
        QTRY_COMPARE_WITH_TIMEOUT(window_->requestModel()->unfinishedCount(), 0, 60000);
        window_->requestBoard()->view()->scrollToBottom();
        window_->requestBoard()->view()->selectRow(window_->requestModel()->rowCount() - 1);
        checkEveryTab(QStringLiteral("before a lab run"));
    }

    void everyTextFitsAfterALabRun() {
        runTheLab();
        checkEveryTab(QStringLiteral("after a lab run"));
    }

    // Issue 31 item 5: Qt's GTK 3 platform theme (QT_QPA_PLATFORMTHEME=gtk3, as scripts/window-check
    // runs the dark theme) gives the application GNOME's font, Cantarell 11 (DejaVu Sans 11 where
    // Cantarell is missing), for Qt's 9 pt: the window's minimum width grew from 1244 to 1305 px
    // (xprop's WM_NORMAL_HINTS) and the Parameters dock was pushed off a 1280 px screen. The
    // offscreen platform takes the same font through QApplication::setFont, before a new window is
    // built (as the theme's font is there before the window); here it asked 1445 px, the lab's
    // setup page and summary table (their full widths as minimums) and its one row of controls.
    void theMinimumSizeFitsUnderGnomesFont() {
        const QFont before = QApplication::font();
        QApplication::setFont(QFont(QStringLiteral("Cantarell"), 11));
        QVERIFY(QFontInfo(QApplication::font()).pointSize() > QFontInfo(before).pointSize());
        window_.reset();
        window_ = makeWindow(QStringLiteral("settings-gnome.ini"));
        QStringList problems;
        for (MainWindow::Tab tab : {MainWindow::Tab::Requests, MainWindow::Tab::Compare, MainWindow::Tab::Batching, MainWindow::Tab::Lab}) {
            window_->showTab(tab);
            settle();
            const QSize minimum = window_->minimumSizeHint();
            // The width here, naming what asks for it; the height is checked below with every text
            // (offscreen and the real GTK window differ there: xprop showed 761 px before the lab's
            // timelines took their height from the font, 809 with a first try, 589 now).
            if (minimum.width() <= kWidth) continue;
            QStringList parts;   // what each dock and the tabs ask for, to name the widget that grew
            for (QDockWidget* d : window_->findChildren<QDockWidget*>())
                parts << QStringLiteral("%1 %2").arg(d->windowTitle()).arg(d->minimumSizeHint().width());
            parts << QStringLiteral("tabs %1").arg(window_->centralWidget()->minimumSizeHint().width());
            for (auto* pages : window_->findChildren<QTabWidget*>())
                for (int i = 0; i < pages->count(); ++i)
                    parts << QStringLiteral("page '%1' %2").arg(pages->tabText(i)).arg(pages->widget(i)->minimumSizeHint().width());
            for (QDockWidget* d : window_->findChildren<QDockWidget*>())
                if (d->widget())
                    for (QWidget* c : d->widget()->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly))
                        if (c->minimumSizeHint().width() > 300)
                            parts << QStringLiteral("%1/%2 %3").arg(d->windowTitle(), QString::fromLatin1(c->metaObject()->className())).arg(c->minimumSizeHint().width());
            problems << QStringLiteral("tab %1: minimum %2x%3 (%4)").arg(int(tab)).arg(minimum.width()).arg(minimum.height()).arg(parts.join(QStringLiteral(", ")));
        }
        if (!problems.isEmpty()) QApplication::setFont(before);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));

        // And every text under that font, as before and after a lab run above: the lab's chart
        // tick labels and axis titles ("...") and the Adapters table's "Rank" header were clipped
        // under the GTK 3 theme's font, with the same docks and the same 1280 px.
        const QString model = test::makeFakeModelDir(dir_.path(), QStringLiteral("tiny-t5-gnome"));
        QVERIFY(test::load_through_panel(*window_, model, 5000));
        for (const char* name : {"lora-gamma", "lora-delta"}) window_->addAdapter(test::makeFakeAdapterDir(dir_.path(), QLatin1String(name)));
        QTRY_COMPARE_WITH_TIMEOUT(window_->adapterModel()->readyNames().size(), 2, 5000);
        window_->composer()->setSelectedTargets({QString(), QStringLiteral("lora-gamma"), QStringLiteral("lora-delta")});
        window_->composer()->setText(QStringLiteral("translate English to German: The house is wonderful."));
        QVERIFY(window_->compareTargets() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(window_->requestModel()->unfinishedCount(), 0, 60000);
        runTheLab();
        checkEveryTab(QStringLiteral("under GNOME's font, after a lab run"));

        // The lab's setup page puts its workload above the policies rather than scrolling sideways:
        // under this font policy B's column lay past the right edge at 1280 px (window-check's dark
        // lab-setup screenshot), where no text measures as cut.
        window_->showTab(MainWindow::Tab::Lab);
        QScrollArea* setup = nullptr;
        for (QWidget* w = window_->labView()->policyEditor(); w && !setup; w = w->parentWidget()) setup = qobject_cast<QScrollArea*>(w);
        QVERIFY(setup);
        for (QWidget* w = setup->parentWidget(); w; w = w->parentWidget())
            if (auto* pages = qobject_cast<QTabWidget*>(w)) {
                pages->setCurrentWidget(setup);
                break;
            }
        settle();
        QVERIFY(setup->isVisible());
        const int sideways = setup->horizontalScrollBar()->maximum();
        QApplication::setFont(before);
        QVERIFY2(sideways == 0, qPrintable(QStringLiteral("the lab's setup page scrolls %1 px sideways in a %2 px viewport")
                                               .arg(sideways).arg(setup->viewport()->width())));
    }

    void cleanupTestCase() { window_.reset(); }
};

QTEST_MAIN(WindowFitTest)
#include "test_window_fit_fake_engine.moc"
