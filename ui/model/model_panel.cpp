#include "model/model_panel.h"

#include <QComboBox>
#include <QStandardItemModel>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTextBrowser>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include "remote/remote_backend.h"

namespace lorascope::ui {

QString familyLabel(Family family) {
    switch (family) {
    case Family::T5: return QStringLiteral("T5");
    case Family::Bart: return QStringLiteral("BART");
    case Family::Bloom: return QStringLiteral("BLOOM");
    case Family::Llama: return QStringLiteral("Llama");
    }
    return {};
}

QString modelSummaryHtml(const QString& dir, const ModelConfig& m, const GenerationConfig& g) {
    QString rows;
    auto row = [&rows](const QString& k, const QString& v) {
        rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(k.toHtmlEscaped(), v.toHtmlEscaped());
    };
    if (isRemoteLocation(dir)) {
        // What a server says about itself; the family-specific sizes are not known here.
        const RemoteEndpoint e = parseRemoteLocation(dir);
        row(QObject::tr("Server"), e.url.toString());
        row(QObject::tr("API"), e.dialect == RemoteDialect::Lorax ? QObject::tr("LoRAX (/generate_stream with details)")
                                                                  : QObject::tr("OpenAI (/v1/completions, streamed, logprobs)"));
        row(QObject::tr("Model"), QString::fromStdString(m.name_or_path));
        return QStringLiteral("<table cellspacing=2>%1</table>").arg(rows);
    }
    row(QObject::tr("Directory"), dir);
    row(QObject::tr("Family"), QStringLiteral("%1 (%2)").arg(familyLabel(m.family), QString::fromStdString(m.model_type)));
    if (!m.name_or_path.empty()) row(QObject::tr("Name"), QString::fromStdString(m.name_or_path));
    if (m.family == Family::T5) {
        const auto& c = m.t5();
        row(QObject::tr("Layers"), QStringLiteral("%1 encoder + %2 decoder").arg(c.num_layers).arg(c.num_decoder_layers));
        row(QObject::tr("Width"), QStringLiteral("d_model %1, d_ff %2, %3 heads × %4").arg(c.d_model).arg(c.d_ff).arg(c.num_heads).arg(c.d_kv));
        row(QObject::tr("Feed-forward"), QString::fromStdString(c.feed_forward_proj));
    } else if (m.family == Family::Bart) {
        const auto& c = m.bart();
        row(QObject::tr("Layers"), QStringLiteral("%1 encoder + %2 decoder").arg(c.encoder_layers).arg(c.decoder_layers));
        row(QObject::tr("Width"), QStringLiteral("d_model %1, ffn %2, %3 heads").arg(c.d_model).arg(c.encoder_ffn_dim).arg(c.encoder_attention_heads));
        row(QObject::tr("Positions"), QString::number(c.max_position_embeddings));
    } else if (m.family == Family::Llama) {
        const auto& c = m.llama();
        row(QObject::tr("Layers"), QString::number(c.num_hidden_layers));
        row(QObject::tr("Width"), QStringLiteral("hidden %1, ffn %2, %3 heads / %4 KV heads × %5 (RoPE)")
                                      .arg(c.hidden_size).arg(c.intermediate_size).arg(c.num_attention_heads)
                                      .arg(c.num_key_value_heads).arg(c.head_dim));
    } else {
        const auto& c = m.bloom();
        row(QObject::tr("Layers"), QString::number(c.n_layer));
        row(QObject::tr("Width"), QStringLiteral("hidden %1, %2 heads (ALiBi)").arg(c.hidden_size).arg(c.n_head));
    }
    row(QObject::tr("Vocabulary"), QString::number(m.vocab_size()));
    if (!m.torch_dtype.empty()) row(QObject::tr("Stored dtype"), QString::fromStdString(m.torch_dtype));
    QStringList tokenizer_files;
    for (const char* f : {"tokenizer.json", "spiece.model", "vocab.json", "merges.txt", "tokenizer_config.json"})
        if (QFileInfo::exists(QDir(dir).filePath(QLatin1String(f)))) tokenizer_files << QLatin1String(f);
    row(QObject::tr("Tokenizer"), tokenizer_files.isEmpty() ? QObject::tr("no tokenizer files found") : tokenizer_files.join(QStringLiteral(", ")));
    QStringList gen;
    if (g.max_new_tokens) gen << QStringLiteral("max_new_tokens %1").arg(*g.max_new_tokens);
    else gen << QStringLiteral("max_length %1").arg(g.max_length.value_or(20));
    gen << (g.do_sample ? QStringLiteral("sampling (T %1, top-k %2, top-p %3)").arg(g.temperature).arg(g.top_k).arg(g.top_p)
                        : QStringLiteral("greedy"));
    if (g.num_beams > 1) gen << QStringLiteral("%1 beams").arg(g.num_beams);
    if (g.repetition_penalty != 1.0) gen << QStringLiteral("repetition penalty %1").arg(g.repetition_penalty);
    if (g.no_repeat_ngram_size > 0) gen << QStringLiteral("no repeat %1-gram").arg(g.no_repeat_ngram_size);
    row(QObject::tr("Generation"), gen.join(QStringLiteral(", ")));
    return QStringLiteral("<table cellspacing=2>%1</table>").arg(rows);
}

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent), elapsed_(std::make_unique<QElapsedTimer>()) {
    auto* layout = new QVBoxLayout(this);
    dir_ = new QComboBox(this);
    dir_->setEditable(true);
    dir_->setInsertPolicy(QComboBox::NoInsert);
    dir_->setAccessibleName(tr("Model directory"));
    dir_->lineEdit()->setPlaceholderText(tr("Checkpoint directory, or a server: http://host:port (LoRAX), openai+http://host:port"));
    dir_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    dir_->setMinimumContentsLength(16);
    layout->addWidget(dir_);

    auto* buttons = new QHBoxLayout;
    browse_ = new QPushButton(tr("Browse…"), this);
    browse_->setAccessibleName(tr("Browse for a model directory"));
    hf_ = new QPushButton(tr("HF cache…"), this);
    hf_->setAccessibleName(tr("Pick a model from the Hugging Face cache"));
    buttons->addWidget(browse_);
    buttons->addWidget(hf_);
    layout->addLayout(buttons);

    layout->addLayout(buildComputeForm());
    auto* load_row = new QHBoxLayout;
    load_ = new QPushButton(tr("Load model"), this);
    load_->setAccessibleName(tr("Load model"));
    load_->setDefault(true);
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setAccessibleName(tr("Cancel loading"));
    cancel_->setEnabled(false);
    load_row->addWidget(load_, 1);
    load_row->addWidget(cancel_);
    layout->addLayout(load_row);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 0);   // busy until the first tensor is read, then tensors read of all (setLoadProgress)
    progress_->setVisible(false);
    progress_->setAccessibleName(tr("Loading progress"));
    layout->addWidget(progress_);
    status_ = new QLabel(tr("No model loaded"), this);
    status_->setWordWrap(true);
    layout->addWidget(status_);
    summary_ = new QTextBrowser(this);
    summary_->setAccessibleName(tr("Model summary"));
    summary_->setMinimumHeight(80);
    layout->addWidget(summary_, 1);

    elapsed_tick_ = new QTimer(this);
    elapsed_tick_->setInterval(250);
    connect(elapsed_tick_, &QTimer::timeout, this, [this] {
        const QString seconds = QString::number(elapsed_->elapsed() / 1000.0, 'f', 1);
        progress_->setFormat(progress_->maximum() > 0 ? tr("%v of %m tensors · %1 s").arg(seconds) : tr("loading… %1 s").arg(seconds));
    });
    connect(load_, &QPushButton::clicked, this, &ModelPanel::loadRequested);
    connect(cancel_, &QPushButton::clicked, this, &ModelPanel::cancelRequested);
    connect(browse_, &QPushButton::clicked, this, &ModelPanel::browseRequested);
    connect(hf_, &QPushButton::clicked, this, &ModelPanel::hfCacheRequested);
    dir_->lineEdit()->installEventFilter(this);   // Return loads (eventFilter)
}

// Return in the field loads, once. Through QLineEdit::returnPressed it loaded twice (the line
// edit passes Return on to its combo box, which hands it back to the line edit), and any Return
// counted: Ctrl+Return (Submit) and Ctrl+Shift+Return (Compare), the window's shortcuts, reach the
// field while those actions are disabled (no model yet) and loaded the model again. They do
// nothing here.
bool ModelPanel::eventFilter(QObject* watched, QEvent* e) {
    if (watched == dir_->lineEdit() && e->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(e);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            if (!(key->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier))) Q_EMIT loadRequested();
            return true;
        }
    }
    return QWidget::eventFilter(watched, e);
}

// Device, dtype (with what it computes on this CPU), threads and a server's token.
QFormLayout* ModelPanel::buildComputeForm() {
    auto* form = new QFormLayout;
    device_ = new QComboBox(this);
    device_->setEditable(true);
    device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda"), QStringLiteral("cuda:1")});
    device_->setAccessibleName(tr("Device"));
    dtype_ = new QComboBox(this);
    // The engine's --dtype choices; setComputeTypes says which this CPU runs and with what.
    dtype_->addItems({QStringLiteral("float32"), QStringLiteral("bfloat16"), QStringLiteral("int8"),
                      QStringLiteral("int4"), QStringLiteral("float16")});
    dtype_->setItemData(dtype_->findText(QStringLiteral("float16")), tr("the whole model in float16: CUDA only (this LibTorch has no float16 CPU kernels)"),
                        Qt::ToolTipRole);
    dtype_->setAccessibleName(tr("Data type"));
    dtype_note_ = new QLabel(this);
    dtype_note_->setWordWrap(true);
    dtype_note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(dtype_, &QComboBox::currentTextChanged, this, [this] { updateDtypeNote(); });
    threads_ = new QSpinBox(this);
    threads_->setRange(0, 256);
    threads_->setSpecialValueText(tr("all cores (%1)").arg(QThread::idealThreadCount()));
    threads_->setAccessibleName(tr("Compute threads"));
    threads_->setToolTip(tr("The most compute threads the engine uses: it computes on fewer while other programs "
                            "keep cores busy (checked between steps)"));
    form->addRow(tr("Device"), device_);
    form->addRow(tr("Dtype"), dtype_);
    form->addRow(QString(), dtype_note_);
    form->addRow(tr("Threads"), threads_);
    token_ = new QLineEdit(this);
    token_->setEchoMode(QLineEdit::Password);
    token_->setPlaceholderText(tr("optional"));
    token_->setToolTip(tr("The API token of a server that needs one (or set LORASCOPE_API_TOKEN); never stored"));
    token_->setAccessibleName(tr("Server API token"));
    form->addRow(tr("API token"), token_);

    return form;
}

ModelPanel::~ModelPanel() = default;

QString ModelPanel::modelDir() const { return dir_->currentText().trimmed(); }
void ModelPanel::setModelDir(const QString& dir) { dir_->setEditText(dir); }

EngineOptions ModelPanel::options() const {
    EngineOptions o;
    // cleanPath would fold a server URL's "//".
    o.model_dir = (isRemoteLocation(modelDir()) ? modelDir() : QDir::cleanPath(modelDir())).toStdString();
    o.device = device_->currentText().trimmed().toStdString();
    o.dtype = dtype_->currentText().toStdString();
    o.threads = threads_->value();
    return o;
}

void ModelPanel::setRecentModels(const QStringList& dirs) {
    const QString current = dir_->currentText();
    dir_->clear();
    dir_->addItems(dirs);
    dir_->setEditText(current);
}

void ModelPanel::setDevice(const QString& device) {
    if (!device.isEmpty()) device_->setCurrentText(device);
}
void ModelPanel::setComputeTypes(const std::vector<ComputeType>& types, const QString& int8_note) {
    int8_note_ = int8_note;
    auto* items = qobject_cast<QStandardItemModel*>(dtype_->model());
    for (const ComputeType& t : types) {
        const int i = dtype_->findText(QString::fromStdString(t.name));
        if (i < 0) continue;
        dtype_->setItemData(i, QString::fromStdString(t.detail), Qt::ToolTipRole);
        if (items && items->item(i)) items->item(i)->setEnabled(t.available);
    }
    updateDtypeNote();
}

void ModelPanel::updateDtypeNote() {
    const QString tip = dtype_->currentData(Qt::ToolTipRole).toString();
    const bool int8 = dtype_->currentText() == QLatin1String("int8");
    dtype_note_->setText(int8 && !int8_note_.isEmpty() ? tip + QStringLiteral(". ") + int8_note_ : tip);
    dtype_note_->setVisible(!dtype_note_->text().isEmpty());
}

void ModelPanel::setDtype(const QString& dtype) { if (!dtype.isEmpty()) dtype_->setCurrentText(dtype); }
void ModelPanel::setThreads(int threads) { threads_->setValue(threads); }
QString ModelPanel::apiToken() const { return token_->text(); }

void ModelPanel::setLoadProgress(qint64 tensors_read, qint64 tensors_total) {
    if (tensors_total <= 0) return;
    progress_->setRange(0, int(tensors_total));
    progress_->setValue(int(qMin(tensors_read, tensors_total)));
    progress_->setFormat(tr("%v of %m tensors · %1 s").arg(elapsed_->elapsed() / 1000.0, 0, 'f', 1));
}

void ModelPanel::setLoading(bool loading, const QString& dir) {
    load_->setEnabled(!loading);
    cancel_->setEnabled(loading);
    progress_->setVisible(loading);
    if (loading) {
        progress_->setRange(0, 0);
        elapsed_->start();
        progress_->setFormat(tr("loading…"));
        progress_->setTextVisible(true);
        elapsed_tick_->start();
        status_->setText(tr("Loading %1").arg(dir));
    } else {
        elapsed_tick_->stop();
    }
}

void ModelPanel::showSummary(const QString& dir, const ModelConfig& model, const GenerationConfig& generation) {
    status_->setText(tr("Loaded %1 in %2 s").arg(QFileInfo(dir).fileName()).arg(elapsed_->isValid() ? elapsed_->elapsed() / 1000.0 : 0.0, 0, 'f', 1));
    summary_->setHtml(modelSummaryHtml(dir, model, generation));
}

void ModelPanel::showMessage(const QString& text) { status_->setText(text); }

}  // namespace lorascope::ui
