// The main window: wiring only. Panels and models do the work; the bridge talks to the engine.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>
#include <vector>

#include "engine_link/bridge_events.h"
#include "engine_link/engine_bridge.h"
#include "shell/help_menu.h"

class QAction;
class QDockWidget;
class QMenu;
class QLabel;
class QTabWidget;

namespace lorascope::ui {

class AdapterListModel;
class AdaptersPanel;
class BatchingInspector;
class ChatView;
class ComparisonView;
class SurpriseView;
class LabView;
class ErrorReporter;
class MetricsPoller;
class ModelPanel;
class ParamsPanel;
class PromptComposer;
class RequestBoard;
class RequestTableModel;
class ServerMetricsModel;
class StepStatsModel;
class WindowSettings;

struct MainWindowOptions {
    EngineFactory engine_factory;
    std::shared_ptr<ErrorReporter> error_reporter;   // null: dialogs
    QString settings_file;                           // empty: the platform's QSettings location
    AboutInfo about;                                 // what Help > About names beyond Lorascope and Qt
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    enum class Tab { Requests, Compare, Batching, Lab };
    explicit MainWindow(MainWindowOptions options, QWidget* parent = nullptr);
    ~MainWindow() override;

    EngineBridge* bridge() const { return bridge_; }
    RequestTableModel* requestModel() const { return requests_; }
    AdapterListModel* adapterModel() const { return adapters_; }
    StepStatsModel* stepModel() const { return steps_; }
    // A remote backend's /metrics, polled while it is loaded (the inspector's server page).
    ServerMetricsModel* serverMetrics() const { return server_metrics_; }
    MetricsPoller* metricsPoller() const { return metrics_poller_; }
    ModelPanel* modelPanel() const { return model_panel_; }
    AdaptersPanel* adaptersPanel() const { return adapters_panel_; }
    PromptComposer* composer() const { return composer_; }
    ParamsPanel* paramsPanel() const { return params_panel_; }
    RequestBoard* requestBoard() const { return board_; }
    ComparisonView* comparisonView() const { return comparison_; }
    ChatView* chatView() const { return chat_; }
    SurpriseView* surpriseView() const { return surprise_; }
    BatchingInspector* batchingInspector() const { return inspector_; }
    LabView* labView() const { return lab_; }
    QAction* openModelAction() const { return open_model_; }
    QAction* submitAction() const { return submit_; }
    QAction* cancelAction() const { return cancel_; }

    // Shows the window: at the size it was closed at, else 1280x800 where that fits the screen
    // with its frame, else maximized (a 1280x800 screen: the frame pushed the status bar off it).
    void showOnScreen();
    void showTab(Tab tab);
    // The lab tab (it fits beside every dock: the layout the person saved is left as it is).
    void focusLab();
    // The same paths the window's own controls take.
    void loadModel(const QString& dir);
    void addAdapter(const QString& dir);
    std::vector<Ticket> submitPrompts();
    int compareTargets();   // returns the comparison group, 0 when nothing was sent
    // Continues request `from` with `choice` forced at generated token `position` (a new row, in
    // the same comparison when `from` is in one); the fork's ticket, or 0 (refused, reported).
    Ticket forkRequest(Ticket from, int position, const TokenAlternative& choice);
    // Generates comparison `compare_group`'s blend column under `merge` (replacing an earlier one).
    Ticket blendComparison(int compare_group, const AdapterMerge& merge);
    void cancelSelectedOrLoad();
    void saveSettings();

protected:
    void closeEvent(QCloseEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void buildActions();
    void buildLayout(EngineFactory lab_factory);
    void buildDocks();
    QDockWidget* addDock(const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area);
    void connectPanels();
    void connectBridge();
    void followServerMetrics();   // after a load: poll a remote server's /metrics, or stop
    void restoreSettings();
    void refreshRecentMenu();
    void refreshStatus();
    void refreshTitle();
    void addViewMenu();
    void browseForModel();
    void pickFromHfCache();
    void browseForAdapter();
    void loadPromptFile();
    void exportResults(const QString& format);
    void report(const QString& title, const QString& message);
    std::vector<Ticket> submit(const QStringList& targets, bool first_prompt_only, int compare_group);

    std::shared_ptr<ErrorReporter> reporter_;
    std::unique_ptr<WindowSettings> settings_;
    EngineBridge* bridge_ = nullptr;
    RequestTableModel* requests_ = nullptr;
    AdapterListModel* adapters_ = nullptr;
    StepStatsModel* steps_ = nullptr;
    ServerMetricsModel* server_metrics_ = nullptr;
    MetricsPoller* metrics_poller_ = nullptr;
    ModelPanel* model_panel_ = nullptr;
    AdaptersPanel* adapters_panel_ = nullptr;
    PromptComposer* composer_ = nullptr;
    ParamsPanel* params_panel_ = nullptr;
    RequestBoard* board_ = nullptr;
    ComparisonView* comparison_ = nullptr;
    ChatView* chat_ = nullptr;
    SurpriseView* surprise_ = nullptr;
    BatchingInspector* inspector_ = nullptr;
    LabView* lab_ = nullptr;
    QDockWidget* params_dock_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QLabel* status_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    QAction *open_model_ = nullptr, *open_hf_ = nullptr, *add_adapter_ = nullptr, *load_prompts_ = nullptr, *submit_ = nullptr,
            *compare_ = nullptr, *cancel_ = nullptr, *cancel_all_ = nullptr, *pause_ = nullptr, *step_ = nullptr,
            *export_jsonl_ = nullptr, *export_md_ = nullptr, *quit_ = nullptr;
    QMenu* view_menu_ = nullptr;
    int next_compare_group_ = 1;
    bool geometry_restored_ = false;
};

}  // namespace lorascope::ui
