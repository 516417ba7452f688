// The comparison's blend sliders (issue 32) against the real LibTorch engine on the demo pack's
// BLOOM, whose plus-one and reverse adapters share r = 8 and so merge as PEFT's
// add_weighted_adapter merges them: the blend column the sliders produce equals
// `lorascope-cli generate` with the same merged_adapters, token for token. Its shout adapter has
// r = 4: a blend of it with plus-one is refused at submit, and the column says why (PEFT refuses
// adapters of different r for every strategy). The demo pack's T5 and BART have no two adapters
// of one r (4, 8, 16), so no blend of theirs can merge; they would show that same refusal.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>

#include "compare/blend_panel.h"
#include "compare/comparison_view.h"
#include "e2e_support.h"
#include "lorascope/engine.h"
#include "model/adapter_list_model.h"
#include "model/model_panel.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_table_model.h"
#include "shell/main_window.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;

namespace {

const QString kBloom = QStringLiteral(LORASCOPE_TEST_DEMO_DIR "/bloom");
const QString kPrompt = QStringLiteral("5 9 9 3 =");
constexpr int64_t kNewTokens = 8;

QString adapterDir(const char* name) { return kBloom + QStringLiteral("/adapters/") + QLatin1String(name); }

QJsonObject mergeJson(const AdapterMerge& m) {
    QJsonArray ids, weights;
    for (const auto& id : m.ids) ids.append(QString::fromStdString(id));
    for (double w : m.weights) weights.append(w);
    return {{QStringLiteral("ids"), ids},
            {QStringLiteral("weights"), weights},
            {QStringLiteral("merge_strategy"), QLatin1String(to_string(m.strategy))},
            {QStringLiteral("density"), m.density},
            {QStringLiteral("majority_sign_method"), QLatin1String(to_string(m.majority_sign_method))},
            {QStringLiteral("seed"), qint64(m.seed)}};
}

}  // namespace

class BlendRealEngineTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    // The demo BLOOM with its three adapters, one prompt compared under the base, plus-one and
    // reverse, greedy, with the blend panel open.
    std::unique_ptr<MainWindow> comparedWindow() {
        MainWindowOptions o;
        o.engine_factory = [](const EngineOptions& e) { return Engine::create(e); };
        o.settings_file = dir_.filePath(QStringLiteral("settings.ini"));
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->modelPanel()->setThreads(1);   // as the CLI below
        w->resize(1280, 800);
        w->show();
        if (!test::load_through_panel(*w, kBloom, 120000) || !w->bridge()->hasEngine()) return nullptr;
        for (const char* a : {"plus-one", "reverse", "shout"}) w->addAdapter(adapterDir(a));
        QElapsedTimer clock;
        clock.start();
        while (w->adapterModel()->readyNames().size() < 3 && clock.elapsed() < 60000) QTest::qWait(20);
        if (w->adapterModel()->readyNames().size() < 3) return nullptr;
        ParamsPanel::Values v = w->paramsPanel()->values();
        v.do_sample = false;
        v.num_beams = 1;
        v.max_new_tokens = kNewTokens;
        v.alternatives = 0;
        w->paramsPanel()->setValues(v);
        w->composer()->setText(kPrompt);
        w->composer()->setSelectedTargets({QString(), QStringLiteral("plus-one"), QStringLiteral("reverse")});
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        if (w->compareTargets() <= 0 || !all.wait(120000)) return nullptr;
        w->showTab(MainWindow::Tab::Compare);
        w->comparisonView()->blendToggle()->setChecked(true);
        return w;
    }

    // Checks `a` and `b` at the given weights (percent) and waits for the blend request's record.
    const RequestRecord* blend(MainWindow& w, const char* a, int wa, const char* b, int wb) {
        BlendPanel* panel = w.comparisonView()->blendPanel();
        QSignalSpy rows(w.requestModel(), &QAbstractItemModel::rowsInserted);
        for (const auto& [name, weight] : {std::pair{a, wa}, std::pair{b, wb}}) {
            panel->adapterCheck(QLatin1String(name))->setChecked(true);
            panel->weightSlider(QLatin1String(name))->setValue(weight);
        }
        if (!rows.wait(5000)) return nullptr;
        QElapsedTimer clock;
        clock.start();
        while (w.requestModel()->unfinishedCount() > 0 && clock.elapsed() < 120000) QTest::qWait(20);
        return &w.requestModel()->recordAt(w.requestModel()->rowCount() - 1);
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void aBlendOfEqualRanksEqualsTheCliWithTheSameMerge() {
        auto w = comparedWindow();
        QVERIFY(w);
        BlendPanel* panel = w->comparisonView()->blendPanel();
        panel->strategyBox()->setCurrentIndex(3);   // dare_ties: seeded pruning and sign election
        panel->densityBox()->setValue(0.6);
        const RequestRecord* r = blend(*w, "plus-one", 70, "reverse", 40);
        QVERIFY(r);
        QVERIFY(r->merge);
        QCOMPARE(r->merge->ids, (std::vector<std::string>{"plus-one", "reverse"}));
        QCOMPARE(r->merge->weights, (std::vector<double>{0.7, 0.4}));
        QCOMPARE(r->merge->strategy, MergeStrategy::DareTies);
        QVERIFY2(r->status == RequestStatus::Finished, qPrintable(r->error));
        QVERIFY(!r->tokens.empty());
        QVERIFY2(w->comparisonView()->columnTitle(3).contains(QStringLiteral("merge:dare_ties")),
                 qPrintable(w->comparisonView()->columnTitle(3)));

        // The same request through lorascope-cli generate.
        const QJsonObject line{{QStringLiteral("id"), QStringLiteral("blend")},
                               {QStringLiteral("prompt"), kPrompt},
                               {QStringLiteral("merged_adapters"), mergeJson(*r->merge)},
                               {QStringLiteral("params"), QJsonObject{{QStringLiteral("max_new_tokens"), qint64(kNewTokens)},
                                                                      {QStringLiteral("do_sample"), false}}}};
        QString error;
        const QByteArray out = test::runCli(
            {QStringLiteral("generate"), QStringLiteral("--model"), kBloom, QStringLiteral("--adapter"),
             QStringLiteral("plus-one=") + adapterDir("plus-one"), QStringLiteral("--adapter"),
             QStringLiteral("reverse=") + adapterDir("reverse"), QStringLiteral("--threads"), QStringLiteral("1"),
             QStringLiteral("--input"), QStringLiteral("-"), QStringLiteral("--output"), QStringLiteral("-")},
            QJsonDocument(line).toJson(QJsonDocument::Compact) + '\n', &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const auto lines = test::parseJsonLines(out);
        QCOMPARE(lines.size(), size_t(1));
        const QJsonObject cli = lines[0];
        QVERIFY2(!cli.contains(QStringLiteral("error")), qPrintable(QString::fromUtf8(QJsonDocument(cli).toJson())));
        std::vector<int64_t> ids;
        for (const auto& v : cli.value(QStringLiteral("token_ids")).toArray()) ids.push_back(v.toInteger());
        test::check_finished_as(*r, cli.value(QStringLiteral("text")).toString(), ids,
                                cli.value(QStringLiteral("finish_reason")).toString());
    }

    void aBlendOfUnequalRanksSaysWhyInItsColumn() {
        auto w = comparedWindow();
        QVERIFY(w);
        const RequestRecord* r = blend(*w, "plus-one", 50, "shout", 50);
        QVERIFY(r);
        QVERIFY(r->merge);
        QCOMPARE(r->status, RequestStatus::Failed);
        QVERIFY(r->tokens.empty());
        QVERIFY2(r->error.contains(QStringLiteral("every adapter of a merge must have the same r")) &&
                     r->error.contains(QStringLiteral("'plus-one' has r 8, 'shout' r 4")),
                 qPrintable(r->error));
        QVERIFY2(!r->error.contains(QLatin1Char('\n')), qPrintable(r->error));
    }
};

QTEST_MAIN(BlendRealEngineTest)
#include "test_blend_real_engine.moc"
