// Issue 32 in the window, against the fake engine: each token's alternatives on hover in the
// comparison columns and the board's detail pane, and the fork a click on one submits.
#include <QHelpEvent>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSlider>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextCursor>
#include <QtTest>

#include "common/theme.h"
#include "compare/blend_panel.h"
#include "compare/comparison_view.h"
#include "compare/surprise_view.h"
#include "compare/token_stream_view.h"
#include "fake_engine.h"
#include "model/adapter_list_model.h"
#include "requests/alternatives_popup.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "shell/error_reporter.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;

namespace {
// Hovering long enough: the tool-tip event Qt sends after the hover delay.
void hover(QWidget* w, const QPoint& pos) {
    QHelpEvent e(QEvent::ToolTip, pos, w->mapToGlobal(pos));
    QApplication::sendEvent(w, &e);
}
}  // namespace

class AlternativesFakeEngineTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_, adapter_a_, adapter_b_;
    test::FakeEngineSettings settings_;
    std::shared_ptr<std::vector<test::FakeEngine*>> engines_ = std::make_shared<std::vector<test::FakeEngine*>>();

    std::unique_ptr<MainWindow> makeWindow() {
        MainWindowOptions o;
        auto settings = settings_;
        auto engines = engines_;
        o.engine_factory = [settings, engines](const EngineOptions& e) {
            auto engine = test::FakeEngine::create(e, settings);
            engines->push_back(static_cast<test::FakeEngine*>(engine.get()));
            return engine;
        };
        o.settings_file = dir_.filePath(QStringLiteral("settings.ini"));
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->resize(1280, 800);
        w->show();
        return w;
    }

    // A loaded window with adapter lora-a and one finished comparison of base and lora-a.
    std::unique_ptr<MainWindow> comparedWindow(bool both_adapters = false) {
        auto w = makeWindow();
        if (!test::load_through_panel(*w, model_, 5000)) return nullptr;
        w->addAdapter(adapter_a_);
        if (both_adapters) w->addAdapter(adapter_b_);
        const int adapters = both_adapters ? 2 : 1;
        QElapsedTimer clock;
        clock.start();
        while (w->adapterModel()->readyNames().size() < adapters && clock.elapsed() < 5000) QTest::qWait(10);
        w->composer()->setText(QStringLiteral("what if it said"));
        QStringList targets{QString(), QStringLiteral("lora-a")};
        if (both_adapters) targets << QStringLiteral("lora-b");
        w->composer()->setSelectedTargets(targets);
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        if (w->compareTargets() <= 0 || !all.wait(10000)) return nullptr;
        return w;
    }

    static QPoint centreOfToken(TokenStreamView* view, int token) {
        for (int y = 2; y < view->height(); y += 3)
            for (int x = 2; x < view->width(); x += 3)
                if (view->tokenAt({x, y}) == token) return {x + 3, y + 3};
        return {-1, -1};
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        model_ = test::makeFakeModelDir(dir_.path(), QStringLiteral("tiny"));
        adapter_a_ = test::makeFakeAdapterDir(dir_.path(), QStringLiteral("lora-a"));
        adapter_b_ = test::makeFakeAdapterDir(dir_.path(), QStringLiteral("lora-b"));
    }
    void init() { settings_ = {}; }

    void requestsAskForAlternativesAndTheBridgeCarriesThem() {
        auto w = comparedWindow();
        QVERIFY(w);
        QCOMPARE(w->paramsPanel()->params().top_alternatives, std::optional<int64_t>(5));   // the default
        const RequestRecord& r = w->requestModel()->recordAt(1);
        QCOMPARE(r.tokens.size(), size_t(12));
        for (size_t i = 0; i < r.tokens.size(); ++i) {
            const auto expected = test::FakeEngine::alternatives_of(r.tokens[i].token_id, r.tokens[i].logprob, i > 0, 5);
            QCOMPARE(r.tokens[i].alternatives.size(), expected.size());
            for (size_t j = 0; j < expected.size(); ++j) {
                QCOMPARE(r.tokens[i].alternatives[j].token_id, expected[j].token_id);
                QCOMPARE(r.tokens[i].alternatives[j].text, expected[j].text);
                QCOMPARE(r.tokens[i].alternatives[j].logprob, expected[j].logprob);
            }
        }
        // 0 = off: nothing asked, nothing shown but the logprob tooltip.
        ParamsPanel::Values v = w->paramsPanel()->values();
        v.alternatives = 0;
        w->paramsPanel()->setValues(v);
        QVERIFY(!w->paramsPanel()->params().top_alternatives);
        // Beam search refuses alternatives: the panel does not send them with beams.
        v.alternatives = 3;
        v.num_beams = 4;
        w->paramsPanel()->setValues(v);
        QVERIFY(!w->paramsPanel()->params().top_alternatives);
    }

    void hoveringAColumnTokenShowsItsAlternatives() {
        auto w = comparedWindow();
        QVERIFY(w);
        ComparisonView* view = w->comparisonView();
        QCOMPARE(view->columnCount(), 2);
        TokenStreamView* column = view->columnView(1);
        const QPoint at = centreOfToken(column, 2);
        QVERIFY(at.x() >= 0);
        hover(column, at);
        AlternativesPopup* popup = column->alternativesPopup();
        QVERIFY(popup);
        QTRY_VERIFY(popup->isVisible());
        QCOMPARE(popup->position(), 2);
        QCOMPARE(popup->rowCount(), 5);
        QVERIFY(popup->isChosenRow(0));   // the chosen token is the most likely one here
        QVERIFY(!popup->isChosenRow(1));
        const RequestRecord* r = w->requestModel()->record(w->requestModel()->recordAt(1).ticket);
        const auto& alt = r->tokens[2].alternatives;
        QVERIFY2(popup->rowText(1).contains(QString::fromStdString(alt[1].text).replace(QLatin1Char(' '), QChar(0x00B7))),
                 qPrintable(popup->rowText(1)));
        QVERIFY(popup->rowText(1).contains(QString::number(double(alt[1].logprob), 'f', 3)));
        QVERIFY(popup->rowText(0).contains(QStringLiteral("chosen")));
        // Below the token, where the mouse can reach it.
        QVERIFY(popup->geometry().top() >= column->mapToGlobal(at).y());
        // A token without alternatives (none asked) falls back to the tooltip and hides the popup.
        hover(column, QPoint(column->width() - 2, column->height() - 2));
        QVERIFY(!popup->isVisible());
    }

    void hoveringTheBoardsDetailShowsTheTokenUnderTheMouse() {
        auto w = comparedWindow();
        QVERIFY(w);
        RequestBoard* board = w->requestBoard();
        board->view()->selectRow(0);
        QPlainTextEdit* detail = board->detailView();
        const RequestRecord& r = w->requestModel()->recordAt(0);
        QTRY_COMPARE(detail->toPlainText(), r.text);
        // The middle of token 3's text.
        int offset = 0;
        for (int i = 0; i < 3; ++i) offset += int(r.tokens[size_t(i)].text.size());
        QTextCursor c(detail->document());
        c.setPosition(offset + int(r.tokens[3].text.size()) / 2 + 1);
        const QPoint at = detail->cursorRect(c).center() - QPoint(2, 0);
        hover(detail->viewport(), at);
        AlternativesPopup* popup = board->alternativesPopup();
        QTRY_VERIFY(popup->isVisible());
        QCOMPARE(popup->position(), 3);
        QVERIFY(popup->rowText(0).contains(r.tokens[3].text.trimmed()));
    }

    void clickingAnAlternativeForksADecoderOnlyRequest() {
        settings_.causal = true;
        auto w = comparedWindow();
        QVERIFY(w);
        const RequestRecord origin = w->requestModel()->recordAt(1);   // lora-a
        // Decoder-only requests with alternatives ask for their prompt's tokens, which the fork needs.
        QVERIFY(origin.params.prompt_logprobs.value_or(false));
        QCOMPARE(origin.prompt_logprobs.size(), size_t(4));   // four words
        TokenStreamView* column = w->comparisonView()->columnView(1);
        hover(column, centreOfToken(column, 4));
        AlternativesPopup* popup = column->alternativesPopup();
        QTRY_VERIFY(popup->isVisible());
        QSignalSpy rows(w->requestModel(), &QAbstractItemModel::rowsInserted);
        QTest::mouseClick(popup, Qt::LeftButton, {}, popup->rowRect(2).center());
        QCOMPARE(rows.count(), 1);
        QCOMPARE(w->requestModel()->rowCount(), 3);
        const RequestRecord& fork = w->requestModel()->recordAt(2);
        QCOMPARE(fork.forked_from, origin.client_id + QStringLiteral(" @ token 5"));
        QVERIFY(w->requestModel()->data(w->requestModel()->index(2, RequestTableModel::ColId)).toString().contains(QStringLiteral("fork of")));
        QCOMPARE(fork.adapter, QStringLiteral("lora-a"));
        QCOMPARE(fork.compare_group, origin.compare_group);   // a third column beside its origin
        // What the engine was sent: the prompt's ids, the four tokens before, the chosen one.
        std::vector<int64_t> ids;
        for (const auto& t : origin.prompt_logprobs) ids.push_back(t.token_id);
        for (int i = 0; i < 4; ++i) ids.push_back(origin.tokens[size_t(i)].token_id);
        ids.push_back(origin.tokens[4].alternatives[2].token_id);
        QVERIFY(!engines_->empty());
        const Request sent = engines_->back()->submitted().back();
        QCOMPARE(sent.input_ids, ids);
        QVERIFY(!sent.prompt);
        QCOMPARE(sent.adapter, std::string("lora-a"));
        QCOMPARE(sent.params.top_alternatives, origin.params.top_alternatives);
        QCOMPARE(sent.params.max_new_tokens, origin.params.max_new_tokens);
        QTRY_COMPARE_WITH_TIMEOUT(w->comparisonView()->columnCount(), 3, 5000);
        QVERIFY2(w->comparisonView()->columnTitle(2).contains(QStringLiteral("fork of ") + origin.client_id),
                 qPrintable(w->comparisonView()->columnTitle(2)));
        QVERIFY(fork.prompt.endsWith(QString::fromStdString(origin.tokens[4].alternatives[2].text)));

        // Its differences are marked where its tokens stand: after the five forced ones, so its
        // token i is compared with the reference's (the base model's) token 5 + i.
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        const RequestRecord& done = w->requestModel()->recordAt(2);
        const RequestRecord& base = w->requestModel()->recordAt(0);
        QCOMPARE(done.fork_offset, 5);
        int aligned = 0, unaligned = 0;
        for (size_t i = 0; i < done.tokens.size(); ++i) {
            if (i + 5 < base.tokens.size()) aligned += base.tokens[i + 5].token_id != done.tokens[i].token_id;
            if (i < base.tokens.size()) unaligned += base.tokens[i].token_id != done.tokens[i].token_id;
        }
        QVERIFY(aligned != unaligned);   // the test tells the two apart
        QCOMPARE(w->comparisonView()->columnView(2)->differingTokens(), aligned);
        if (qEnvironmentVariableIsSet("LORASCOPE_TEST_GRAB_DIR"))   // for looking at it
            w->comparisonView()->grab().save(qEnvironmentVariable("LORASCOPE_TEST_GRAB_DIR") + QStringLiteral("/fork.png"));
    }

    // A column's highlights at an offset (a fork's): token i against the reference's offset + i.
    void highlightsCompareAtTheColumnsOffset() {
        auto tokens = [](std::vector<int64_t> ids) {
            std::vector<StreamedToken> out;
            for (int64_t id : ids) {
                StreamedToken t;
                t.token_id = id;
                t.text = QStringLiteral(" w%1").arg(id);
                out.push_back(t);
            }
            return out;
        };
        const auto reference = tokens({1, 2, 3, 4, 5, 6});
        TokenStreamView view;
        view.setTokens(tokens({4, 9, 6, 7}), &reference, 3);
        QCOMPARE(view.differingTokens(), 1);   // 9 against 5; 7 is past the reference's end
        view.setTokens(tokens({4, 9, 6, 7}), &reference);
        QCOMPARE(view.differingTokens(), 4);
    }

    // An encoder-decoder keeps its encoder input and forces the tokens at its decoder's start.
    void anEncoderDecoderForkForcesTheDecoderPrefix() {
        auto w = comparedWindow();   // the fake's T5
        QVERIFY(w);
        const RequestRecord origin = w->requestModel()->recordAt(1);   // lora-a
        TokenStreamView* column = w->comparisonView()->columnView(1);
        hover(column, centreOfToken(column, 2));
        AlternativesPopup* popup = column->alternativesPopup();
        QTRY_VERIFY(popup->isVisible());
        QTest::mouseClick(popup, Qt::LeftButton, {}, popup->rowRect(1).center());
        QCOMPARE(w->findChild<QMessageBox*>(QLatin1String(DialogErrorReporter::kObjectName)), nullptr);
        QCOMPARE(w->requestModel()->rowCount(), 3);
        const Request sent = engines_->back()->submitted().back();
        QCOMPARE(*sent.prompt, origin.prompt.toStdString());   // the same encoder input
        QVERIFY(sent.input_ids.empty());
        const std::vector<int64_t> forced = {origin.tokens[0].token_id, origin.tokens[1].token_id,
                                             origin.tokens[2].alternatives[1].token_id};
        QCOMPARE(sent.decoder_prefix_ids, forced);
        QCOMPARE(sent.adapter, std::string("lora-a"));
        QCOMPARE(sent.params.max_new_tokens, origin.params.max_new_tokens);
        const RequestRecord& fork = w->requestModel()->recordAt(2);
        QCOMPARE(fork.forked_from, origin.client_id + QStringLiteral(" @ token 3"));
        QCOMPARE(fork.compare_group, origin.compare_group);
        QVERIFY2(fork.prompt.startsWith(origin.prompt + QStringLiteral(" → ")) &&
                     fork.prompt.endsWith(QString::fromStdString(origin.tokens[2].alternatives[1].text)),
                 qPrintable(fork.prompt));
        QTRY_COMPARE_WITH_TIMEOUT(w->comparisonView()->columnCount(), 3, 5000);   // beside its origin
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        QCOMPARE(w->requestModel()->recordAt(2).status, RequestStatus::Finished);
        const int rows_before = w->requestModel()->rowCount();
        // Clicking the chosen token's own row forks nothing (the fork rebuilt the columns).
        column = w->comparisonView()->columnView(1);
        hover(column, centreOfToken(column, 1));
        popup = column->alternativesPopup();
        QTRY_VERIFY(popup && popup->isVisible());
        QTest::mouseClick(popup, Qt::LeftButton, {}, popup->rowRect(0).center());
        QCOMPARE(w->requestModel()->rowCount(), rows_before);
    }

    void theSurpriseViewShadesAPromptUnderEachTarget() {
        settings_.causal = true;
        auto w = comparedWindow();
        QVERIFY(w);
        SurpriseView* view = w->surpriseView();
        w->showTab(MainWindow::Tab::Compare);
        w->comparisonView()->showPage(view);
        view->textEdit()->setText(QStringLiteral("the cat sat down"));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        QTest::mouseClick(view->scoreButton(), Qt::LeftButton);
        QCOMPARE(view->columnCount(), 2);   // base and lora-a, as the composer has them checked
        QVERIFY(all.wait(5000));
        const Request sent = engines_->back()->submitted().back();
        QVERIFY(sent.params.prompt_logprobs.value_or(false));
        QCOMPARE(*sent.prompt, std::string("the cat sat down"));
        for (int c = 0; c < 2; ++c) {
            Request as_sent;
            as_sent.prompt = "the cat sat down";
            as_sent.adapter = c ? "lora-a" : "";
            const auto expected = test::FakeEngine::prompt_logprobs_of(as_sent, true);
            QVERIFY(view->columnTitle(c).contains(c ? QStringLiteral("lora-a") : QStringLiteral("base")));
            TokenStreamView* column = view->columnView(c);
            QCOMPARE(expected.size(), size_t(4));
            for (int i = 0; i < 4; ++i)
                QVERIFY2(column->tooltipFor(i).contains(QString::fromStdString(expected[size_t(i)].text).toHtmlEscaped()),
                         qPrintable(column->tooltipFor(i)));
            QVERIFY(column->tooltipFor(3).contains(QString::number(double(*expected[3].logprob), 'f', 4)));
            double sum = 0;
            for (const auto& t : expected) sum += double(t.logprob.value_or(0.0f));
            QVERIFY2(view->columnStats(c).contains(QStringLiteral("3 tokens · sum %1").arg(sum, 0, 'f', 2)),
                     qPrintable(view->columnStats(c)));
        }
        // The shading runs from the base (certain) to the differ highlight (at the floor and below).
        const QPalette pal = view->palette();
        QCOMPARE(TokenStreamView::surpriseShade(pal, 0.0f).rgb(), pal.color(QPalette::Base).rgb());
        QCOMPARE(TokenStreamView::surpriseShade(pal, -30.0f).rgb(), differHighlight(pal).rgb());
    }

    void theSurpriseViewScoresATargetForEncoderDecoderModels() {
        auto w = comparedWindow();   // the fake's T5
        QVERIFY(w);
        SurpriseView* view = w->surpriseView();
        view->textEdit()->setText(QStringLiteral("Das Haus"));
        QVERIFY(view->score().empty());   // no source: nothing sent
        QCOMPARE(w->requestModel()->rowCount(), 2);
        view->sourceEdit()->setText(QStringLiteral("The house"));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        QCOMPARE(view->score().size(), size_t(2));
        QVERIFY(all.wait(5000));
        const Request sent = engines_->back()->submitted().back();
        QCOMPARE(*sent.prompt, std::string("The house"));
        QCOMPARE(*sent.target, std::string("Das Haus"));
        QCOMPARE(view->columnView(1)->tooltipFor(1).contains(QStringLiteral("Haus")), true);
    }

    void theBlendSlidersRegenerateTheBlendColumn() {
        auto w = comparedWindow(true);
        QVERIFY(w);
        ComparisonView* view = w->comparisonView();
        QCOMPARE(view->columnCount(), 3);
        const int group = view->currentGroup();
        w->showTab(MainWindow::Tab::Compare);
        view->blendToggle()->setChecked(true);
        BlendPanel* blend = view->blendPanel();
        QVERIFY(blend->isVisible());
        QVERIFY(blend->adapterCheck(QStringLiteral("lora-a")) && blend->adapterCheck(QStringLiteral("lora-b")));
        QSignalSpy rows(w->requestModel(), &QAbstractItemModel::rowsInserted);
        blend->adapterCheck(QStringLiteral("lora-a"))->setChecked(true);
        QTest::qWait(600);
        QCOMPARE(rows.count(), 0);   // one adapter is no blend
        blend->adapterCheck(QStringLiteral("lora-b"))->setChecked(true);
        blend->weightSlider(QStringLiteral("lora-a"))->setValue(70);
        blend->weightSlider(QStringLiteral("lora-b"))->setValue(30);
        blend->strategyBox()->setCurrentIndex(1);   // ties
        blend->densityBox()->setValue(0.5);
        QVERIFY(rows.wait(3000));   // once the controls rest
        QTest::qWait(500);
        QCOMPARE(rows.count(), 1);  // one request for all those changes
        const Request sent = engines_->back()->submitted().back();
        QVERIFY(sent.merge);
        QCOMPARE(sent.merge->ids, (std::vector<std::string>{"lora-a", "lora-b"}));
        QCOMPARE(sent.merge->weights, (std::vector<double>{0.7, 0.3}));
        QCOMPARE(sent.merge->strategy, MergeStrategy::Ties);
        QCOMPARE(sent.merge->density, 0.5);
        QCOMPARE(*sent.prompt, std::string("what if it said"));
        QVERIFY(sent.adapter.empty());
        QCOMPARE(sent.params.top_alternatives, w->requestModel()->recordAt(0).params.top_alternatives);
        QTRY_COMPARE_WITH_TIMEOUT(view->columnCount(), 4, 3000);
        QVERIFY2(view->columnTitle(3).contains(QStringLiteral("merge:ties")), qPrintable(view->columnTitle(3)));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        const Ticket first_blend = w->requestModel()->recordAt(3).ticket;
        QCOMPARE(w->requestModel()->recordAt(3).text,
                 QString::fromStdString(test::FakeEngine::expected_text("what if it said", merge_name(*sent.merge), 12)));
        // A new weight regenerates the column: the new blend takes the old one's place.
        blend->weightSlider(QStringLiteral("lora-b"))->setValue(90);
        QVERIFY(rows.wait(3000));
        QCOMPARE(engines_->back()->submitted().back().merge->weights, (std::vector<double>{0.7, 0.9}));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        QCOMPARE(view->columnCount(), 4);
        QCOMPARE(w->requestModel()->record(first_blend)->compare_group, 0);
        QCOMPARE(w->requestModel()->recordAt(4).compare_group, group);
        QVERIFY(view->columnTitle(3).contains(QStringLiteral("0.9")));
    }
};

QTEST_MAIN(AlternativesFakeEngineTest)
#include "test_alternatives_fake_engine.moc"
