#include "shell/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QScrollArea>
#include <QScreen>
#include <QScrollBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <exception>

#include "chat/chat_view.h"
#include "compare/comparison_view.h"
#include "compare/surprise_view.h"
#include "inspector/batching_inspector.h"
#include "inspector/server_metrics_view.h"
#include "inspector/step_stats_model.h"
#include "lab/lab_view.h"
#include "model/adapter_list_model.h"
#include "model/adapters_panel.h"
#include "model/hf_cache.h"
#include "model/model_panel.h"
#include "remote/metrics_poller.h"
#include "remote/remote_backend.h"
#include "remote/server_metrics.h"
#include "engine_link/request_limits.h"
#include "requests/language_fields.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_fanout.h"
#include "requests/request_fork.h"
#include "requests/request_table_model.h"
#include "requests/results_export.h"
#include "shell/error_reporter.h"
#include "shell/window_settings.h"
#include "common/side_scroll.h"

namespace lorascope::ui {

namespace {
// The tab widget of a page that no other tab widget of the page holds (Compare's Generations,
// Surprise and Blend; the lab's setup, results and frontier), if the page has one.
QTabWidget* outermostPages(QWidget* page) {
    for (QTabWidget* pages : page->findChildren<QTabWidget*>()) {
        if (!pages->isVisibleTo(page)) continue;   // the inspector's server page, shown for a server only
        QWidget* up = pages->parentWidget();
        while (up && up != page && !qobject_cast<QTabWidget*>(up)) up = up->parentWidget();
        if (up == page) return pages;
    }
    return nullptr;
}
}  // namespace

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent),
      reporter_(options.error_reporter ? options.error_reporter : std::make_shared<DialogErrorReporter>()),
      settings_(std::make_unique<WindowSettings>(options.settings_file)) {
    setWindowTitle(tr("Lorascope"));
    setObjectName(QStringLiteral("LorascopeMainWindow"));
    setAcceptDrops(true);
    // The lab builds engines of its own (one per policy) with the same factory.
    EngineFactory lab_factory = options.engine_factory;
    bridge_ = new EngineBridge(std::move(options.engine_factory), this);
    requests_ = new RequestTableModel(this);
    adapters_ = new AdapterListModel(this);
    steps_ = new StepStatsModel(2000, this);
    server_metrics_ = new ServerMetricsModel(3600, this);
    metrics_poller_ = new MetricsPoller(server_metrics_, this);
    buildActions();
    buildLayout(std::move(lab_factory));
    addViewMenu();
    addHelpMenu(this, options.about);
    connectBridge();
    restoreSettings();
    refreshStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions() {
    auto make = [this](const QString& text, const QKeySequence& key, auto slot) {
        auto* a = new QAction(text, this);
        if (!key.isEmpty()) a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    open_model_ = make(tr("&Open model…"), QKeySequence(Qt::CTRL | Qt::Key_O), [this] { browseForModel(); });
    open_hf_ = make(tr("Open from &Hugging Face cache…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), [this] { pickFromHfCache(); });
    add_adapter_ = make(tr("&Add adapter…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A), [this] { browseForAdapter(); });
    load_prompts_ = make(tr("&Load prompts…"), QKeySequence(Qt::CTRL | Qt::Key_L), [this] { loadPromptFile(); });
    export_jsonl_ = make(tr("Export results as JSON &Lines…"), {}, [this] { exportResults(QStringLiteral("jsonl")); });
    export_md_ = make(tr("Export results as &Markdown…"), {}, [this] { exportResults(QStringLiteral("md")); });
    quit_ = make(tr("&Quit"), QKeySequence::Quit, [this] { close(); });
    submit_ = make(tr("&Submit"), QKeySequence(Qt::CTRL | Qt::Key_Return), [this] { submitPrompts(); });
    submit_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
    submit_->setShortcutContext(Qt::WindowShortcut);
    compare_ = make(tr("&Compare targets"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return), [this] { compareTargets(); });
    cancel_ = make(tr("C&ancel"), QKeySequence(Qt::Key_Escape), [this] { cancelSelectedOrLoad(); });
    cancel_->setToolTip(tr("Cancel the selected requests, or the model load in progress (Esc)"));
    cancel_all_ = make(tr("Cancel a&ll"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Escape), [this] { bridge_->cancelAll(); });
    pause_ = new QAction(tr("&Pause engine"), this);
    pause_->setCheckable(true);
    pause_->setShortcut(QKeySequence(Qt::Key_F8));
    connect(pause_, &QAction::toggled, bridge_, &EngineBridge::setPaused);
    step_ = make(tr("S&tep once"), QKeySequence(Qt::Key_F10), [this] { bridge_->stepOnce(); });
    for (QAction* a : {open_model_, open_hf_, add_adapter_, load_prompts_, submit_, compare_, cancel_, cancel_all_, pause_, step_, quit_})
        addAction(a);   // shortcuts work whichever panel has focus (and Help lists them)

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open_model_);
    file->addAction(open_hf_);
    recent_menu_ = file->addMenu(tr("&Recent models"));
    file->addSeparator();
    file->addAction(add_adapter_);
    file->addAction(load_prompts_);
    file->addSeparator();
    file->addAction(export_jsonl_);
    file->addAction(export_md_);
    file->addSeparator();
    file->addAction(quit_);
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    for (QAction* a : {submit_, compare_, cancel_, cancel_all_}) run->addAction(a);
    run->addSeparator();
    run->addAction(pause_);
    run->addAction(step_);
}

// Alt+1..5 show the tabs (keyboard users, and scripts/window-check's xdotool), under the docks.
// A tab with pages of its own (Compare, the inspector, the lab) takes the focus to their tab bar,
// where Left and Right turn the pages: without a mouse they were out of reach.
void MainWindow::addViewMenu() {
    view_menu_->addSeparator();
    for (int i = 0; i < tabs_->count(); ++i) {
        QAction* a = view_menu_->addAction(tabs_->tabText(i), this, [this, i] {
            tabs_->setCurrentIndex(i);
            if (QTabWidget* pages = outermostPages(tabs_->widget(i))) pages->tabBar()->setFocus(Qt::ShortcutFocusReason);
        });
        a->setShortcut(QKeySequence(Qt::ALT | Qt::Key(Qt::Key_1 + i)));
        addAction(a);
    }
}

void MainWindow::buildLayout(EngineFactory lab_factory) {
    setDockNestingEnabled(true);
    buildDocks();
    composer_ = new PromptComposer(this);
    board_ = new RequestBoard(requests_, this);
    auto* requests_page = new QSplitter(Qt::Vertical, this);
    requests_page->addWidget(composer_);
    requests_page->addWidget(board_);
    requests_page->setStretchFactor(0, 1);
    requests_page->setStretchFactor(1, 3);
    comparison_ = new ComparisonView(requests_, this);
    surprise_ = new SurpriseView(requests_, bridge_, comparison_);
    surprise_->setTargetsSource([this] { return composer_->selectedTargets(); });
    comparison_->addPage(surprise_, tr("Surprise"));
    inspector_ = new BatchingInspector(steps_, new ServerMetricsView(server_metrics_, requests_), this);
    tabs_ = new QTabWidget(this);
    tabs_->setAccessibleName(tr("Views"));
    tabs_->addTab(requests_page, tr("Prompts && requests"));
    tabs_->addTab(comparison_, tr("Compare adapters"));
    tabs_->addTab(inspector_, tr("Batching inspector"));
    lab_ = new LabView(bridge_, std::move(lab_factory), this);
    tabs_->addTab(lab_, tr("Batching lab"));
    chat_ = new ChatView(bridge_, this);   // last, so that the other tabs keep their places
    // Its row of turn buttons asks ~720 px under GNOME's 11 pt font: the page scrolls sideways
    // rather than push the window past a 1280 px screen (test_ui_window_fit_fake_engine).
    tabs_->addTab(sideScrolling(chat_, tabs_), tr("Chat"));
    setCentralWidget(tabs_);
    status_ = new QLabel(this);
    statusBar()->addPermanentWidget(status_, 1);
    connectPanels();
}

QDockWidget* MainWindow::addDock(const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(content);
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::buildDocks() {
    model_panel_ = new ModelPanel(this);
    // Scrolling down, as the Parameters dock does: under GNOME's 11 pt font the Model and Adapters
    // docks' minimum heights stacked made the window 809 px tall on an 800 px screen (xdotool), its
    // status bar off the screen.
    auto* model_scroll = new QScrollArea(this);
    model_scroll->setWidget(model_panel_);
    model_scroll->setWidgetResizable(true);
    model_scroll->setFrameShape(QFrame::NoFrame);
    model_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    model_scroll->setMinimumWidth(model_panel_->minimumSizeHint().width() + model_scroll->verticalScrollBar()->sizeHint().width() + 4);
    QDockWidget* model_dock = addDock(tr("Model"), QStringLiteral("modelDock"), model_scroll, Qt::LeftDockWidgetArea);
    adapters_panel_ = new AdaptersPanel(adapters_, this);
    QDockWidget* adapters_dock = addDock(tr("Adapters"), QStringLiteral("adaptersDock"), adapters_panel_, Qt::LeftDockWidgetArea);
    splitDockWidget(model_dock, adapters_dock, Qt::Vertical);

    params_panel_ = new ParamsPanel(this);
    auto* params_scroll = new QScrollArea(this);
    params_scroll->setWidget(params_panel_);
    params_scroll->setWidgetResizable(true);
    params_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // The scroll area hides its content's minimum width from the dock: state it, so nothing is clipped.
    params_scroll->setMinimumWidth(params_panel_->minimumSizeHint().width() + params_scroll->verticalScrollBar()->sizeHint().width() + 4);
    params_dock_ = addDock(tr("Parameters"), QStringLiteral("paramsDock"), params_scroll, Qt::RightDockWidgetArea);
    resizeDocks({model_dock, params_dock_}, {255, 250}, Qt::Horizontal);
    resizeDocks({model_dock, adapters_dock}, {430, 250}, Qt::Vertical);

    view_menu_ = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : {model_dock, adapters_dock, params_dock_}) view_menu_->addAction(d->toggleViewAction());
}

void MainWindow::connectPanels() {
    connect(model_panel_, &ModelPanel::loadRequested, this, [this] { loadModel(model_panel_->modelDir()); });
    connect(model_panel_, &ModelPanel::cancelRequested, bridge_, &EngineBridge::cancelLoad);
    connect(model_panel_, &ModelPanel::browseRequested, this, &MainWindow::browseForModel);
    connect(model_panel_, &ModelPanel::hfCacheRequested, this, &MainWindow::pickFromHfCache);
    connect(adapters_panel_, &AdaptersPanel::addRequested, this, [this](const QString& dir) {
        if (dir.isEmpty()) browseForAdapter();
        else addAdapter(dir);
    });
    connect(adapters_panel_, &AdaptersPanel::removeRequested, this, [this](const QStringList& names) {
        for (const QString& n : names) {
            adapters_->markRemoving(n);
            bridge_->unloadAdapter(n);
        }
    });
    connect(adapters_, &AdapterListModel::readyNamesChanged, composer_, &PromptComposer::setAdapters);
    connect(composer_, &PromptComposer::submitRequested, this, [this] { submitPrompts(); });
    connect(composer_, &PromptComposer::compareRequested, this, [this] { compareTargets(); });
    connect(composer_, &PromptComposer::loadFileRequested, this, &MainWindow::loadPromptFile);
    connect(board_, &RequestBoard::cancelRequested, this, [this](const std::vector<Ticket>& tickets) {
        for (Ticket t : tickets) bridge_->cancel(t);
    });
    connect(board_, &RequestBoard::cancelAllRequested, bridge_, &EngineBridge::cancelAll);
    connect(board_, &RequestBoard::exportRequested, this, &MainWindow::exportResults);
    connect(board_, &RequestBoard::forkRequested, this, &MainWindow::forkRequest);
    connect(comparison_, &ComparisonView::forkRequested, this, &MainWindow::forkRequest);
    connect(adapters_, &AdapterListModel::readyNamesChanged, comparison_, &ComparisonView::setAdapters);
    connect(comparison_, &ComparisonView::blendRequested, this, &MainWindow::blendComparison);
    connect(inspector_, &BatchingInspector::pauseToggled, pause_, &QAction::setChecked);
    connect(inspector_, &BatchingInspector::stepRequested, bridge_, &EngineBridge::stepOnce);
    connect(adapters_, &AdapterListModel::readyNamesChanged, lab_, &LabView::setAdapterNames);
    connect(lab_, &LabView::errorOccurred, this, &MainWindow::report);
}

void MainWindow::connectBridge() {
    connect(bridge_, &EngineBridge::requestSubmitted, requests_, &RequestTableModel::addRequest);
    connect(bridge_, &EngineBridge::drained, requests_, &RequestTableModel::applyDrain);
    connect(bridge_, &EngineBridge::drained, steps_, &StepStatsModel::applyDrain);
    connect(bridge_, &EngineBridge::drained, this, [this] { refreshStatus(); });
    connect(requests_, &QAbstractItemModel::rowsRemoved, this, [this] { refreshStatus(); });   // Clear done
    connect(bridge_, &EngineBridge::pausedChanged, inspector_, &BatchingInspector::setPaused);
    connect(bridge_, &EngineBridge::pausedChanged, pause_, &QAction::setChecked);
    connect(bridge_, &EngineBridge::pausedChanged, this, [this] { refreshStatus(); });
    connect(bridge_, &EngineBridge::loadStarted, this, [this](const QString& dir) {
        model_panel_->setLoading(true, dir);
        refreshStatus();
    });
    connect(bridge_, &EngineBridge::loadFinished, this, [this](const QString& dir) {
        model_panel_->setLoading(false);
        model_panel_->showSummary(dir, *bridge_->modelConfig(), *bridge_->generationConfig());
        params_panel_->setGenerationConfig(*bridge_->generationConfig());
        params_panel_->setMaxNewTokensLimit(maxNewTokensFor(*bridge_->modelConfig()), bridge_->modelConfig()->context_tokens().value_or(0));
        params_panel_->setLanguageCodes(LanguageFields::codesOf(dir));
        adapters_->clear();   // a new engine starts without adapters (a remote one with the server's)
        for (const auto& a : bridge_->adapters()) adapters_->markLoaded(a);
        steps_->clear();
        followServerMetrics();
        inspector_->setEngineAvailable(true);
        settings_->rememberModel(dir);
        refreshRecentMenu();
        refreshStatus();
    });
    connect(bridge_, &EngineBridge::loadFailed, this, [this](const QString& dir, const QString& message) {
        model_panel_->setLoading(false);
        model_panel_->showMessage(tr("Could not load %1").arg(dir));
        report(tr("Could not load the model"), message);
        refreshStatus();
    });
    connect(bridge_, &EngineBridge::loadProgress, model_panel_, &ModelPanel::setLoadProgress);
    connect(bridge_, &EngineBridge::loadCancelled, this, [this](const QString& dir) {
        model_panel_->setLoading(false);
        model_panel_->showMessage(tr("Loading %1 cancelled").arg(dir));
        refreshStatus();
    });
    connect(bridge_, &EngineBridge::adapterLoaded, this, [this](const AdapterInfo& info) {
        adapters_->markLoaded(info);
        settings_->rememberAdapter(QString::fromStdString(info.path));
        refreshRecentMenu();
    });
    connect(bridge_, &EngineBridge::adapterFailed, this, [this](const QString& name, const QString&, const QString& message) {
        adapters_->remove(name);   // refused: not listed as if it were one (the dialog says why)
        report(tr("Could not add the adapter"), message);
    });
    connect(bridge_, &EngineBridge::adapterUnloaded, adapters_, &AdapterListModel::remove);
    connect(bridge_, &EngineBridge::errorOccurred, this, &MainWindow::report);
}

void MainWindow::report(const QString& title, const QString& message) { reporter_->report(this, title, message); }

void MainWindow::followServerMetrics() {
    // The location as the factory saw it (the token is filed under it, never part of it).
    const QString location = QString::fromStdString(bridge_->engineOptions().model_dir);
    const bool remote = isRemoteLocation(location);
    if (remote) metrics_poller_->start(parseRemoteLocation(location).url, RemoteCredentials::token(location));
    else metrics_poller_->stop();
    inspector_->setRemote(remote);
    refreshStatus();
}

void MainWindow::showOnScreen() {
    const QScreen* where = screen() ? screen() : QGuiApplication::primaryScreen();
    const QRect available = where ? where->availableGeometry() : QRect(0, 0, 1280, 800);
    // A window manager's frame: about 30 px of title and borders; the size hint would be too late.
    if (!geometry_restored_ && (available.width() < 1280 + 16 || available.height() < 800 + 40)) showMaximized();
    else show();
}

void MainWindow::showTab(Tab tab) { tabs_->setCurrentIndex(int(tab)); }

void MainWindow::focusLab() { showTab(Tab::Lab); }

void MainWindow::loadModel(const QString& dir) {
    if (dir.trimmed().isEmpty()) {
        report(tr("No model directory"), tr("Choose a Hugging Face checkpoint directory first."));
        return;
    }
    model_panel_->setModelDir(dir);
    // A server's token goes to the remote backend in memory; the location alone is remembered.
    if (isRemoteLocation(dir))
        RemoteCredentials::setToken(QString::fromStdString(model_panel_->options().model_dir), model_panel_->apiToken());
    bridge_->loadModel(model_panel_->options());
}

void MainWindow::addAdapter(const QString& dir) {
    const QString clean = QDir::cleanPath(dir);
    const QString name = adapters_->uniqueNameFor(clean);
    adapters_->markLoading(name, clean);
    bridge_->loadAdapter(name, clean);
}

std::vector<Ticket> MainWindow::submit(const QStringList& targets, bool first_prompt_only, int compare_group) {
    std::vector<Ticket> tickets;
    std::vector<PromptItem> items = composer_->prompts();
    if (items.empty()) return tickets;
    if (first_prompt_only) items.resize(1);
    if (!bridge_->hasEngine()) {
        report(tr("No model loaded"), tr("Load a model before submitting prompts."));
        return tickets;
    }
    // Everything sent by one action joins the engine's batch at the same step, however long the
    // window takes to add each row.
    bridge_->holdSubmissions(true);
    const bool encoder_decoder = bridge_->modelConfig()->is_encoder_decoder();
    const bool remote = isRemoteLocation(QString::fromStdString(bridge_->engineOptions().model_dir));
    for (Request& r : fanOutRequests(items, targets, params_panel_->params(), compare_group != 0)) {
        askForPromptTokens(r, encoder_decoder, remote);
        if (const Ticket t = bridge_->submit(std::move(r), compare_group)) tickets.push_back(t);
    }
    bridge_->holdSubmissions(false);
    refreshStatus();
    return tickets;
}

std::vector<Ticket> MainWindow::submitPrompts() {
    const QStringList targets = composer_->selectedTargets();
    if (targets.isEmpty()) {
        report(tr("No target"), tr("Check the base model and/or at least one adapter to send the prompts to."));
        return {};
    }
    return submit(targets, false, 0);
}

int MainWindow::compareTargets() {
    const QStringList targets = composer_->selectedTargets();
    if (targets.size() < 2) {
        report(tr("Nothing to compare"), tr("Check at least two targets (the base model and adapters) to compare."));
        return 0;
    }
    const int group = next_compare_group_;
    if (submit(targets, true, group).empty()) return 0;
    ++next_compare_group_;
    comparison_->showGroup(group);
    comparison_->showGenerations();
    showTab(Tab::Compare);
    return group;
}

Ticket MainWindow::forkRequest(Ticket from, int position, const TokenAlternative& choice) {
    const RequestRecord* record = requests_->record(from);
    if (!record || !bridge_->hasEngine()) return 0;
    ForkPlan plan = planFork(*record, position, choice, bridge_->modelConfig()->is_encoder_decoder());
    if (!plan.refusal.isEmpty()) {
        report(tr("Cannot fork this request"), plan.refusal);
        return 0;
    }
    // In the comparison of its origin, so that the fork streams beside the columns it came from.
    const Ticket ticket = bridge_->submit(std::move(plan.request), record->compare_group);
    if (ticket) requests_->setForkedFrom(ticket, plan.origin, plan.prompt, plan.offset);
    refreshStatus();
    return ticket;
}

Ticket MainWindow::blendComparison(int compare_group, const AdapterMerge& merge) {
    std::vector<const RequestRecord*> group;
    for (Ticket t : requests_->ticketsInGroup(compare_group)) group.push_back(requests_->record(t));
    std::optional<Request> blend = blendOf(group, merge);
    if (!blend || !bridge_->hasEngine()) return 0;
    askForPromptTokens(*blend, bridge_->modelConfig()->is_encoder_decoder(),
                       isRemoteLocation(QString::fromStdString(bridge_->engineOptions().model_dir)));
    const Ticket ticket = bridge_->submit(std::move(*blend), compare_group);
    if (ticket) comparison_->setBlendTicket(compare_group, ticket);
    refreshStatus();
    return ticket;
}

void MainWindow::cancelSelectedOrLoad() {
    if (bridge_->isLoading()) {
        bridge_->cancelLoad();
        return;
    }
    for (Ticket t : board_->selectedTickets()) bridge_->cancel(t);
}

void MainWindow::browseForModel() {
    const QStringList recent_dirs = settings_->recentModels();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a Hugging Face model directory"),
                                                          recent_dirs.isEmpty() ? QDir::homePath() : recent_dirs.front());
    if (!dir.isEmpty()) loadModel(dir);
}

void MainWindow::pickFromHfCache() {
    HfCachePickerDialog dialog(hfHubCacheDir(), this);
    if (dialog.exec() == QDialog::Accepted && !dialog.selectedDirectory().isEmpty()) loadModel(dialog.selectedDirectory());
}

void MainWindow::browseForAdapter() {
    const QStringList recent_dirs = settings_->recentAdapters();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a PEFT LoRA adapter directory"),
                                                          recent_dirs.isEmpty() ? QDir::homePath() : recent_dirs.front());
    if (!dir.isEmpty()) addAdapter(dir);
}

void MainWindow::loadPromptFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load prompts"), QDir::homePath(),
                                                      tr("Prompts (*.txt *.jsonl);;All files (*)"));
    if (path.isEmpty()) return;
    try {
        composer_->loadFile(path);
    } catch (const std::exception& e) {
        report(tr("Could not read the prompts"), QString::fromStdString(e.what()));
    }
}

void MainWindow::exportResults(const QString& format) {
    bridge_->drainNow();
    const bool md = format == QLatin1String("md");
    const QString path = QFileDialog::getSaveFileName(this, md ? tr("Export results as Markdown") : tr("Export results as JSON Lines"),
                                                      QDir::home().filePath(md ? QStringLiteral("lorascope-results.md") : QStringLiteral("lorascope-results.jsonl")),
                                                      md ? tr("Markdown (*.md)") : tr("JSON Lines (*.jsonl)"));
    if (path.isEmpty()) return;
    QString error;
    if (!ui::exportResults(requests_->records(), path, &error)) report(tr("Could not export"), error);
    else statusBar()->showMessage(tr("Exported %1 results to %2").arg(requests_->rowCount()).arg(path), 5000);
}

void MainWindow::refreshStatus() {
    QString model = bridge_->hasEngine() ? QFileInfo(bridge_->modelDir()).fileName() : tr("no model");
    if (bridge_->isLoading()) model = tr("loading…");
    const int open = requests_->unfinishedCount();
    status_->setText(tr("Model: %1  ·  %2 active of %3 requests%4")
                         .arg(model).arg(open).arg(requests_->rowCount())
                         .arg(bridge_->isPaused() ? tr("  ·  engine paused") : QString()));
    const bool engine = bridge_->hasEngine();
    for (QAction* a : {add_adapter_, submit_, compare_}) a->setEnabled(engine);
    refreshTitle();
    // A remote server is not ours to hold (the remote backend ignores pause and step).
    const bool holdable = engine && !inspector_->showsServer();
    pause_->setEnabled(holdable);
    step_->setEnabled(holdable && bridge_->isPaused());
    inspector_->setEngineAvailable(engine);
}

// "t5 — Lorascope": the loaded model (a server's model and host) names the window.
void MainWindow::refreshTitle() {
    QString title = tr("Lorascope");
    if (bridge_->hasEngine()) {
        const QString dir = bridge_->modelDir();
        QString name = QFileInfo(dir).fileName();
        if (isRemoteLocation(dir)) {
            const QString model = QString::fromStdString(bridge_->modelConfig()->name_or_path);
            name = model.isEmpty() ? parseRemoteLocation(dir).url.host() : tr("%1 on %2").arg(model, parseRemoteLocation(dir).url.authority());
        }
        title = tr("%1 — Lorascope").arg(name);
    }
    if (windowTitle() != title) setWindowTitle(title);
}

void MainWindow::refreshRecentMenu() {
    const QStringList models = settings_->recentModels();
    recent_menu_->clear();
    for (const QString& dir : models) recent_menu_->addAction(dir, this, [this, dir] { loadModel(dir); });
    recent_menu_->setEnabled(!models.isEmpty());
    model_panel_->setRecentModels(models);
    adapters_panel_->setRecentAdapters(settings_->recentAdapters());
}

void MainWindow::restoreSettings() {
    refreshRecentMenu();
    const WindowSettings::ModelChoice model = settings_->modelChoice();
    model_panel_->setDevice(model.device);
    model_panel_->setDtype(model.dtype);
    model_panel_->setThreads(model.threads);
    const QStringList models = settings_->recentModels();
    if (!models.isEmpty()) model_panel_->setModelDir(models.front());
    params_panel_->applyChangedValues(settings_->changedParams());
    geometry_restored_ = restoreGeometry(settings_->geometry());
    if (!geometry_restored_) resize(1280, 800);
    restoreState(settings_->dockState());
}

void MainWindow::saveSettings() {
    const EngineOptions o = model_panel_->options();
    const WindowSettings::ModelChoice model{QString::fromStdString(o.device), QString::fromStdString(o.dtype), o.threads};
    settings_->save(model, params_panel_->changedValues(), saveGeometry(), saveState());
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    QMainWindow::closeEvent(e);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    for (const QUrl& url : e->mimeData()->urls())
        if (url.isLocalFile() && QFileInfo(url.toLocalFile()).exists()) {
            e->acceptProposedAction();
            return;
        }
}

void MainWindow::dropEvent(QDropEvent* e) {
    // A directory with adapter_config.json is an adapter; another directory is a model;
    // a .txt/.jsonl file is a prompt list.
    for (const QUrl& url : e->mimeData()->urls()) {
        const QFileInfo info(url.toLocalFile());
        if (info.isDir() && QFileInfo::exists(QDir(info.filePath()).filePath(QStringLiteral("adapter_config.json"))))
            addAdapter(info.filePath());
        else if (info.isDir())
            loadModel(info.filePath());
        else if (info.isFile()) {
            try {
                composer_->loadFile(info.filePath());
            } catch (const std::exception& ex) {
                report(tr("Could not read the prompts"), QString::fromStdString(ex.what()));
            }
        }
    }
    e->acceptProposedAction();
}

}  // namespace lorascope::ui
