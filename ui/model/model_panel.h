// Choosing and loading a model: directory (typed, browsed, recent, from the HF cache), device,
// dtype and threads; a progress bar (tensors read) and a cancel button while the engine loads; the summary after.
#pragma once

#include <QStringList>
#include <QWidget>

#include "lorascope/engine.h"
#include "lorascope/runtime.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QTimer;
class QElapsedTimer;

namespace lorascope::ui {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    ~ModelPanel() override;

    QString modelDir() const;
    void setModelDir(const QString& dir);
    EngineOptions options() const;
    void setRecentModels(const QStringList& dirs);
    void setDevice(const QString& device);
    void setDtype(const QString& dtype);
    // What each CPU dtype computes on this machine (lorascope::cpu_compute_types(), given by the
    // application, which links the engine): tooltips, unavailable ones disabled, and a line under
    // the selector for the chosen one, with what int8 costs in accuracy.
    void setComputeTypes(const std::vector<ComputeType>& types, const QString& int8_note);
    void setThreads(int threads);
    // The API token for a server location (http://..., openai+http://...); never stored.
    QString apiToken() const;

    void updateDtypeNote();
    void setLoading(bool loading, const QString& dir = {});
    // Tensors read so far of the checkpoint's (EngineOptions::load_progress): the bar fills.
    void setLoadProgress(qint64 tensors_read, qint64 tensors_total);
    void showSummary(const QString& dir, const ModelConfig& model, const GenerationConfig& generation);
    void showMessage(const QString& text);

    QPushButton* loadButton() const { return load_; }
    QPushButton* cancelButton() const { return cancel_; }

Q_SIGNALS:
    void loadRequested();
    void cancelRequested();
    void browseRequested();
    void hfCacheRequested();

protected:
    bool eventFilter(QObject* watched, QEvent* e) override;

private:
    QFormLayout* buildComputeForm();
    QComboBox* dir_ = nullptr;
    QComboBox* device_ = nullptr;
    QComboBox* dtype_ = nullptr;
    QLabel* dtype_note_ = nullptr;
    QString int8_note_;
    QSpinBox* threads_ = nullptr;
    QLineEdit* token_ = nullptr;
    QPushButton *browse_ = nullptr, *hf_ = nullptr, *load_ = nullptr, *cancel_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QTextBrowser* summary_ = nullptr;
    QTimer* elapsed_tick_ = nullptr;
    std::unique_ptr<QElapsedTimer> elapsed_;
};

// "T5", "BART", "BLOOM": the UI's own names, so it does not need the engine library.
QString familyLabel(Family family);
// An HTML summary: family, sizes, tokenizer files, generation defaults.
QString modelSummaryHtml(const QString& dir, const ModelConfig& model, const GenerationConfig& generation);

}  // namespace lorascope::ui
