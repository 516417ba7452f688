// Token choice: HF's seeded draws for a single request, draws that do not depend on the batch,
// top_k = 1 sampling equal to greedy, logprobs from the processed distribution.
#include <QtTest/QtTest>

#include <cmath>
#include <random>

#include "sampling/logits_processor.h"
#include "sampling/next_token_chooser.h"
#include "sampling_records.h"

using namespace lorascope;
using namespace lorascope::sampling;

namespace {

struct Run {
    std::string name;
    ResolvedGenerationParams params;
    std::vector<int64_t> prompt;
    at::Tensor logits;   // [steps, vocab]
    std::vector<int64_t> hf_tokens;
};

// One request being decoded: its ids so far and its generator.
struct Decoding {
    const Run* run;
    std::vector<int64_t> ids;
    at::Generator generator;
    std::vector<int64_t> tokens;
};

ResolvedGenerationParams resolved(const std::string& params_json) {
    GenerationConfig config;
    config.eos_token_ids = {2};
    return resolve(parse_generation_params(params_json), config);
}

}  // namespace

class TestNextTokenChooser : public QObject {
    Q_OBJECT

    test::SamplingRecords records_;
    std::vector<Run> runs_;

    // Advances every request one step in one batch; `neighbours` adds rows that are not checked.
    void step(std::vector<Decoding*>& batch, int64_t step_index, const std::vector<at::Tensor>& neighbour_scores,
              const ResolvedGenerationParams& neighbour_params, std::vector<std::vector<int64_t>>& neighbour_ids,
              std::vector<at::Generator>& neighbour_generators) {
        std::vector<LogitsRow> rows;
        std::vector<at::Generator> generators;
        std::vector<at::Tensor> scores;
        for (size_t n = 0; n < neighbour_scores.size(); ++n) {
            rows.push_back({&neighbour_params, &neighbour_ids[n], 1});
            generators.push_back(neighbour_generators[n]);
            scores.push_back(neighbour_scores[n]);
        }
        for (Decoding* d : batch) {
            rows.push_back({&d->run->params, &d->ids, static_cast<int64_t>(d->run->prompt.size())});
            generators.push_back(d->generator);
            scores.push_back(d->run->logits[step_index]);
        }
        at::Tensor batch_scores = at::stack(scores);
        process_logits(batch_scores, rows);
        std::vector<TokenChoice> choices = choose_next_tokens(batch_scores, rows, generators);
        for (size_t n = 0; n < neighbour_scores.size(); ++n) neighbour_ids[n].push_back(choices[n].token_id);
        for (size_t i = 0; i < batch.size(); ++i) {
            const int64_t token = choices[neighbour_scores.size() + i].token_id;
            batch[i]->ids.push_back(token);
            batch[i]->tokens.push_back(token);
        }
    }

private Q_SLOTS:
    void initTestCase() {
        records_ = test::load_sampling_records();
        if (records_.json.is_null())
            QFAIL(("oracle output missing under " + test::oracle_dir() + "/sampling (run the oracle_sampling step)").c_str());
        for (const auto& r : records_.json["sampling_runs"]) {
            Run run;
            run.name = r["name"].get<std::string>();
            run.params = test::resolved_from(r);
            run.prompt = r["prompt"].get<std::vector<int64_t>>();
            run.logits = records_.floats(r["logits_offset"].get<int64_t>(), r["steps"].get<int64_t>(),
                                         r["vocab"].get<int64_t>());
            run.hf_tokens = r["tokens"].get<std::vector<int64_t>>();
            runs_.push_back(std::move(run));
        }
        QVERIFY(runs_.size() >= 3);
    }

    // A single request with seed S draws what HF draws after torch.manual_seed(S).
    void seededSamplingMatchesHfAlone() {
        for (const Run& run : runs_) {
            Decoding d{&run, run.prompt, make_request_generator(*run.params.seed), {}};
            std::vector<Decoding*> batch{&d};
            std::vector<std::vector<int64_t>> no_ids;
            std::vector<at::Generator> no_generators;
            for (int64_t s = 0; s < run.logits.size(0); ++s) step(batch, s, {}, run.params, no_ids, no_generators);
            QVERIFY2(d.tokens == run.hf_tokens, run.name.c_str());
        }
    }

    // The same requests decoded together, with sampling and greedy neighbours that come and go:
    // every request still draws exactly HF's tokens.
    void seededSamplingIndependentOfNeighbours() {
        const ResolvedGenerationParams neighbour_params =
            resolved(R"({"do_sample": true, "temperature": 1.7, "top_k": 0, "seed": 5})");
        const ResolvedGenerationParams greedy_params = resolved(R"({"repetition_penalty": 1.4})");
        std::mt19937 rng(3);
        for (int composition = 0; composition < 3; ++composition) {
            std::vector<Decoding> decodings;
            for (const Run& run : runs_)
                if (run.logits.size(1) == runs_[0].logits.size(1))
                    decodings.push_back({&run, run.prompt, make_request_generator(*run.params.seed), {}});
            QVERIFY(decodings.size() >= 2);
            std::vector<Decoding*> batch;
            for (Decoding& d : decodings) batch.push_back(&d);
            if (composition == 1) std::reverse(batch.begin(), batch.end());
            const int64_t vocab = runs_[0].logits.size(1);
            for (int64_t s = 0; s < runs_[0].logits.size(0); ++s) {
                // Between 0 and 4 neighbours, half of them greedy, fresh each step.
                const int count = composition == 0 ? 0 : static_cast<int>(rng() % 5);
                std::vector<at::Tensor> neighbour_scores;
                std::vector<std::vector<int64_t>> neighbour_ids;
                std::vector<at::Generator> neighbour_generators;
                for (int n = 0; n < count; ++n) {
                    neighbour_scores.push_back(at::randn({vocab}) * 2);
                    neighbour_ids.push_back({1, 2, 3});
                    neighbour_generators.push_back(make_request_generator(rng()));
                }
                const ResolvedGenerationParams& p = (s % 2 == 0) ? neighbour_params : greedy_params;
                step(batch, s, neighbour_scores, p, neighbour_ids, neighbour_generators);
            }
            for (const Decoding& d : decodings)
                QVERIFY2(d.tokens == d.run->hf_tokens, (d.run->name + ", composition " + std::to_string(composition)).c_str());
        }
    }

    void sameSeedSameTokens() {
        const ResolvedGenerationParams params = resolved(R"({"do_sample": true, "top_k": 0, "seed": 42})");
        at::Tensor scores = at::randn({1, 1000});
        std::vector<int64_t> ids{4};
        std::vector<LogitsRow> rows{{&params, &ids, 1}};
        std::vector<int64_t> first, second, other;
        for (auto* out : {&first, &second}) {
            std::vector<at::Generator> gens{make_request_generator(42)};
            for (int i = 0; i < 20; ++i) out->push_back(choose_next_tokens(scores, rows, gens)[0].token_id);
        }
        std::vector<at::Generator> gens{make_request_generator(43)};
        for (int i = 0; i < 20; ++i) other.push_back(choose_next_tokens(scores, rows, gens)[0].token_id);
        QVERIFY(first == second);
        QVERIFY(first != other);  // 20 draws from 1000 near-uniform tokens: a collision is ~impossible
    }

    // top_k = 1 leaves one candidate, so sampling must pick greedy's token whatever the seed.
    void topKOneEqualsGreedy() {
        const ResolvedGenerationParams greedy = resolved(R"({"repetition_penalty": 1.3, "no_repeat_ngram_size": 2})");
        const ResolvedGenerationParams top1 =
            resolved(R"({"do_sample": true, "top_k": 1, "temperature": 0.6, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2})");
        for (int trial = 0; trial < 20; ++trial) {
            at::Tensor logits = at::randn({6, 5000}) * 4;
            std::vector<std::vector<int64_t>> ids(6);
            for (auto& h : ids)
                for (int i = 0; i < 12; ++i) h.push_back(at::randint(0, 5000, {1}).item<int64_t>() % 20);
            std::vector<LogitsRow> greedy_rows, sample_rows;
            std::vector<at::Generator> none(6), gens;
            for (int r = 0; r < 6; ++r) {
                greedy_rows.push_back({&greedy, &ids[r], 3});
                sample_rows.push_back({&top1, &ids[r], 3});
                gens.push_back(make_request_generator(static_cast<uint64_t>(trial * 10 + r)));
            }
            at::Tensor a = logits.clone(), b = logits.clone();
            process_logits(a, greedy_rows);
            process_logits(b, sample_rows);
            auto g = choose_next_tokens(a, greedy_rows, none);
            auto s = choose_next_tokens(b, sample_rows, gens);
            for (int r = 0; r < 6; ++r) QCOMPARE(s[r].token_id, g[r].token_id);
        }
    }

    // logprobs come from log_softmax of HF's processed scores (the distribution chosen from).
    void logprobsFromProcessedScores() {
        int checked = 0;
        for (const auto& c : records_.json["cases"]) {
            ResolvedGenerationParams params = test::resolved_from(c);
            params.logprobs = true;
            params.do_sample = false;  // choose greedily from HF's processed scores
            const int64_t rows = c["rows"].get<int64_t>(), vocab = c["vocab"].get<int64_t>();
            at::Tensor hf = records_.floats(c["processed_offset"].get<int64_t>(), rows, vocab);
            auto ids = c["input_ids"].get<std::vector<std::vector<int64_t>>>();
            std::vector<LogitsRow> lrows;
            for (auto& h : ids) lrows.push_back({&params, &h, c["input_ids_length"].get<int64_t>()});
            auto choices = choose_next_tokens(hf, lrows, std::vector<at::Generator>(rows));
            at::Tensor expected = hf.log_softmax(-1);
            for (int64_t r = 0; r < rows; ++r) {
                QCOMPARE(choices[r].token_id, c["argmax"][r].get<int64_t>());
                const float want = expected[r][choices[r].token_id].item<float>();
                QVERIFY2(std::fabs(choices[r].logprob - want) <= 1e-5f * std::max(1.0f, std::fabs(want)),
                         c["name"].get<std::string>().c_str());
                ++checked;
            }
        }
        QVERIFY(checked > 50);
    }

    void noLogprobsUnlessAsked() {
        const ResolvedGenerationParams params = resolved("{}");
        std::vector<int64_t> ids{1};
        std::vector<LogitsRow> rows{{&params, &ids, 1}};
        auto choice = choose_next_tokens(at::randn({1, 10}), rows, std::vector<at::Generator>(1));
        QVERIFY(std::isnan(choice[0].logprob));
    }

    // A sampling row whose scores are not a distribution (NaN, +inf) gets an error, not a token,
    // and takes nothing from the others: their draws are what they draw without it (issue 26: one
    // such row threw from multinomial and failed every request of its batch).
    void aBrokenRowFailsAloneAndTheOthersDrawAsWithoutIt() {
        const ResolvedGenerationParams params = resolved(R"({"do_sample": true, "top_k": 0})");
        std::vector<int64_t> ids{1};
        const at::Tensor good = at::randn({2, 50}, at::TensorOptions().dtype(at::kFloat));
        auto run = [&](bool with_broken_rows) {
            std::vector<at::Tensor> scores{good[0]};
            if (with_broken_rows) {
                scores.push_back(at::full({50}, std::nanf(""), at::kFloat));
                scores.push_back(at::full({50}, INFINITY, at::kFloat));
            }
            scores.push_back(good[1]);
            std::vector<LogitsRow> rows(scores.size(), LogitsRow{&params, &ids, 1});
            std::vector<at::Generator> generators;
            for (size_t r = 0; r < scores.size(); ++r) generators.push_back(make_request_generator(100 + (r == 0 ? 0 : 1)));
            std::vector<int64_t> drawn;
            for (int step = 0; step < 20; ++step) {
                const auto choices = choose_next_tokens(at::stack(scores), rows, generators);
                drawn.push_back(choices.front().error.empty() ? choices.front().token_id : -1);
                drawn.push_back(choices.back().error.empty() ? choices.back().token_id : -1);
                for (size_t r = 1; r + 1 < choices.size(); ++r) {
                    const std::string& e = choices[r].error;   // one line, from multinomial's check
                    const bool refused = e.find("probability tensor") != std::string::npos && e.find('\n') == std::string::npos;
                    drawn.push_back(refused ? -2 : choices[r].token_id);
                }
            }
            return drawn;
        };
        const std::vector<int64_t> with = run(true), without = run(false);
        std::vector<int64_t> good_rows_of_with;
        for (size_t i = 0; i < with.size(); i += 4) {
            good_rows_of_with.push_back(with[i]);
            good_rows_of_with.push_back(with[i + 1]);
            QCOMPARE(with[i + 2], int64_t(-2));   // both broken rows refused, every step
            QCOMPARE(with[i + 3], int64_t(-2));
        }
        QCOMPARE(good_rows_of_with, without);
        QVERIFY(std::find(without.begin(), without.end(), -1) == without.end());
    }
};

QTEST_APPLESS_MAIN(TestNextTokenChooser)
#include "test_next_token_chooser.moc"
