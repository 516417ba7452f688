// Beam search against HF's BeamSearchScorer and processors run by the oracle on a toy model
// whose logits are a table lookup (last token, position) that both sides compute.
#include <QtTest/QtTest>

#include <cmath>

#include "sampling/beam_search.h"
#include "sampling/logits_processor.h"
#include "sampling/next_token_chooser.h"
#include "sampling_records.h"

using namespace lorascope;
using namespace lorascope::sampling;

namespace {

struct Search {
    std::string name;
    ResolvedGenerationParams params;
    std::vector<int64_t> prompt;
    std::vector<int64_t> hf_sequence;
    double hf_score = 0;
    int64_t max_length = 0;
    // Running state.
    std::unique_ptr<BeamSearch> beam;
    std::vector<std::vector<int64_t>> beams;
    at::Generator generator;
    bool finished = false;
    BeamSearch::Result result;
};

}  // namespace

class TestBeamSearch : public QObject {
    Q_OBJECT

    test::SamplingRecords records_;
    at::Tensor last_, position_;

    std::vector<Search> load() {
        std::vector<Search> searches;
        for (const auto& r : records_.json["beam_searches"]) {
            Search s;
            s.name = r["name"].get<std::string>();
            s.params = test::resolved_from(r);
            s.prompt = r["prompt"].get<std::vector<int64_t>>();
            s.hf_sequence = r["sequence"].get<std::vector<int64_t>>();
            s.hf_score = r["score"].get<double>();
            const int64_t prompt_len = static_cast<int64_t>(s.prompt.size());
            s.max_length = prompt_len + s.params.max_new_tokens_for(prompt_len);
            searches.push_back(std::move(s));
        }
        return searches;
    }

    // Decodes every search in `batch` together: their beams are consecutive rows of one batch,
    // processed by one process_logits call, as the engine will do.
    void run_together(std::vector<Search*> batch) {
        for (Search* s : batch) {
            s->beam = std::make_unique<BeamSearch>(s->params, static_cast<int64_t>(s->prompt.size()), s->max_length);
            s->beams.assign(static_cast<size_t>(s->params.num_beams), s->prompt);
            if (s->params.do_sample) s->generator = make_request_generator(*s->params.seed);
        }
        for (;;) {
            std::vector<Search*> running;
            for (Search* s : batch)
                if (!s->finished) running.push_back(s);
            if (running.empty()) return;
            std::vector<LogitsRow> rows;
            std::vector<at::Tensor> logits;
            for (Search* s : running)
                for (const auto& ids : s->beams) {
                    rows.push_back({&s->params, &ids, static_cast<int64_t>(s->prompt.size())});
                    logits.push_back(last_[ids.back()] + position_[static_cast<int64_t>(ids.size())]);
                }
            at::Tensor scores = at::stack(logits).log_softmax(-1).contiguous();
            process_logits(scores, rows);
            int64_t offset = 0;
            for (Search* s : running) {
                const int64_t n = s->beam->num_beams();
                BeamSearch::Step step = s->beam->step(scores.narrow(0, offset, n), s->beams, s->generator);
                offset += n;
                std::vector<std::vector<int64_t>> next;
                for (int64_t b = 0; b < n; ++b) {
                    next.push_back(s->beams[static_cast<size_t>(step.source[b])]);
                    next.back().push_back(step.tokens[b]);
                }
                s->beams = std::move(next);
                if (s->beam->done() || static_cast<int64_t>(s->beams[0].size()) >= s->max_length) {
                    s->result = s->beam->finalize(s->beams).front();
                    s->finished = true;
                }
            }
        }
    }

    void check(const Search& s, const std::string& context) {
        QVERIFY2(s.result.ids == s.hf_sequence, (s.name + context + ": sequence differs from HF's").c_str());
        QVERIFY2(std::fabs(s.result.score - s.hf_score) <= 1e-5 * std::max(1.0, std::fabs(s.hf_score)),
                 (s.name + context + ": score " + std::to_string(s.result.score) + " vs HF " +
                  std::to_string(s.hf_score)).c_str());
    }

private Q_SLOTS:
    void initTestCase() {
        records_ = test::load_sampling_records();
        if (records_.json.is_null())
            QFAIL(("oracle output missing under " + test::oracle_dir() + "/sampling (run the oracle_sampling step)").c_str());
        const auto& t = records_.json["beam_tables"];
        const int64_t vocab = t["vocab"].get<int64_t>(), positions = t["positions"].get<int64_t>();
        last_ = records_.floats(t["last_offset"].get<int64_t>(), vocab, vocab);
        position_ = records_.floats(t["position_offset"].get<int64_t>(), positions, vocab);
        QVERIFY(records_.json["beam_searches"].size() >= 6);
    }

    void eachSearchAlone() {
        std::vector<Search> searches = load();
        for (Search& s : searches) {
            run_together({&s});
            check(s, " alone");
        }
    }

    // All searches at once, beams of different requests side by side in one batch.
    void allSearchesInOneBatch() {
        std::vector<Search> searches = load();
        std::vector<Search*> batch;
        for (Search& s : searches) batch.push_back(&s);
        std::reverse(batch.begin(), batch.end());
        run_together(batch);
        for (const Search& s : searches) check(s, " in a shared batch");
    }
};

QTEST_APPLESS_MAIN(TestBeamSearch)
#include "test_beam_search.moc"
