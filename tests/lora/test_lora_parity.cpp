// LoRA numerics against HF + PEFT (tests/oracle/lora_oracle.py): for every base family, one batch
// holding the base model and every adapter (ranks 4..16, rsLoRA, rank/alpha patterns, every
// supported module including lm_head), several prompts each, reproduces each row's logits along
// HF's greedy path within 1e-4 and HF's greedy tokens exactly, rows grouped or interleaved, and the
// same as each row computed alone.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <map>

#include "adapters/adapter_registry.h"
#include "adapters/multi_lora_hook.h"
#include "lora_records.h"
#include "models/model.h"

using namespace lorascope;
using nlohmann::json;

namespace {

constexpr double kLogitTolerance = 1e-4;
// The Llama family (issue 27) is held to log-probabilities within 1e-5 as well: those of HF's greedy
// tokens. Over the whole vocabulary, 2e-5: qwen2's rsLoRA adapter (alpha 30 on k_proj, a 15-fold
// scale) reached 1.05e-5 on a token of log-probability -6.4 under AVX-512 after the ISA-dispatched
// products came in (its greedy token: 6.2e-6; under AVX2 both stay within 1e-5).
constexpr double kLogprobTolerance = 1e-5;
constexpr double kVocabLogprobTolerance = 2e-5;

bool llama_family(const json& rec) {
    const std::string f = rec["family"].get<std::string>();
    return f == "llama" || f == "mistral" || f == "qwen2";
}

struct Row {
    size_t run = 0;      // index into records["runs"]
    size_t prompt = 0;
};

struct Fixture {
    test::LoraBase base;
    std::unique_ptr<models::Model> model;
    std::unique_ptr<adapters::AdapterRegistry> registry;
};

Fixture open_fixture(const std::string& name) {
    Fixture f;
    f.base = test::load_lora_base(name);
    f.model = models::load_model(f.base.model_dir);
    f.registry = std::make_unique<adapters::AdapterRegistry>(*f.model);
    for (const auto& a : f.base.adapter_names()) f.registry->load(a, f.base.adapter_dir(a));
    return f;
}

// Runs `rows` as one batch: prefill, then decode steps fed with each row's HF greedy tokens.
// Returns per row the logits of every step [steps][V] and the argmax tokens.
struct BatchResult {
    std::vector<std::vector<at::Tensor>> logits;
    std::vector<std::vector<int64_t>> argmax;
    int64_t decode_cpu_loop_calls = 0;  // decoding-step deltas computed by the CPU loop
};

// The decoding steps get their own hook, as the engine's do. With `cpu_loop` false the CPU takes
// the paths other devices use: per-adapter ATen products at prefill and, given `stack`, the
// stacked products in decoding steps.
BatchResult run_rows(const Fixture& f, const std::vector<Row>& rows, int64_t steps, adapters::LoraStack* stack = nullptr,
                     bool cpu_loop = true) {
    const json& rec = f.base.records;
    std::vector<adapters::AdapterLease> leases;
    std::vector<std::shared_ptr<const adapters::LoraWeights>> row_weights;
    std::vector<std::vector<int64_t>> prompts;
    for (const Row& r : rows) {
        const std::string adapter = rec["runs"][r.run]["adapter"].get<std::string>();
        if (adapter.empty()) {
            row_weights.push_back(nullptr);
        } else {
            leases.push_back(f.registry->acquire(adapter));
            row_weights.push_back(leases.back().weights());
        }
        prompts.push_back(rec["prompts"][r.prompt].get<std::vector<int64_t>>());
    }
    adapters::MultiLoraHook hook(row_weights, f.model->options().device(), nullptr, cpu_loop);
    const models::LoraHook* lora = hook.empty() ? nullptr : &hook;
    adapters::MultiLoraHook decode_hook(row_weights, f.model->options().device(), stack, cpu_loop);
    const models::LoraHook* decode_lora = decode_hook.empty() ? nullptr : &decode_hook;

    BatchResult out;
    out.logits.resize(rows.size());
    out.argmax.resize(rows.size());
    auto record = [&](const at::Tensor& logits) {
        at::Tensor best = logits.argmax(-1);
        for (size_t i = 0; i < rows.size(); ++i) {
            out.logits[i].push_back(logits[static_cast<int64_t>(i)].clone());
            out.argmax[i].push_back(best[static_cast<int64_t>(i)].item<int64_t>());
        }
    };
    auto batch = models::TokenBatch::from_rows(prompts, f.model->pad_token_id());
    auto [state, logits] = f.model->prefill(batch, lora);
    record(logits);
    const int64_t pad = f.model->pad_token_id();
    for (int64_t s = 1; s < steps; ++s) {
        std::vector<int64_t> next;
        for (const Row& r : rows) {
            const auto& path = rec["runs"][r.run]["greedy"][r.prompt];
            next.push_back(s - 1 < static_cast<int64_t>(path.size()) ? path[s - 1].get<int64_t>() : pad);
        }
        record(f.model->decode_step(state, at::tensor(next, at::TensorOptions().dtype(at::kLong)), decode_lora));
    }
    out.decode_cpu_loop_calls = decode_hook.cpu_position_calls();
    return out;
}

std::string row_label(const json& rec, const Row& r) {
    const std::string a = rec["runs"][r.run]["adapter"].get<std::string>();
    return (a.empty() ? std::string("base") : a) + " prompt " + std::to_string(r.prompt);
}

// Compares a row's logits with HF's and its argmax with HF's greedy tokens.
void check_row(const json& rec, const Row& r, const BatchResult& got, size_t i) {
    const auto& run = rec["runs"][r.run];
    const auto& expected_logits = run["step_logits"][r.prompt];
    const auto& path = run["greedy"][r.prompt];
    for (size_t s = 0; s < expected_logits.size(); ++s) {
        at::Tensor hf = at::tensor(expected_logits[s].get<std::vector<float>>());
        const double diff = (got.logits[i][s] - hf).abs().max().item<double>();
        if (diff > kLogitTolerance)
            QFAIL(qPrintable(QString("%1 step %2: max |logit - HF| = %3").arg(row_label(rec, r).c_str()).arg(s).arg(diff)));
        if (!llama_family(rec)) continue;
        const at::Tensor lp = (at::log_softmax(got.logits[i][s], -1) - at::log_softmax(hf, -1)).abs();
        const double all = lp.max().item<double>();
        const double chosen = s < path.size() ? lp[path[s].get<int64_t>()].item<double>() : 0;
        if (chosen > kLogprobTolerance || all > kVocabLogprobTolerance)
            QFAIL(qPrintable(QString("%1 step %2: |logprob - HF| = %3 on HF's greedy token, %4 at most")
                                 .arg(row_label(rec, r).c_str()).arg(s).arg(chosen).arg(all)));
    }
    for (size_t s = 0; s < got.argmax[i].size() && s < path.size(); ++s)
        if (got.argmax[i][s] != path[s].get<int64_t>())
            QFAIL(qPrintable(QString("%1 step %2: token %3, HF chose %4")
                                 .arg(row_label(rec, r).c_str()).arg(s).arg(got.argmax[i][s]).arg(path[s].get<int64_t>())));
}

}  // namespace

class TestLoraParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void mixed_batch_reproduces_every_row_data() {
        QTest::addColumn<QString>("base");
        for (const auto& b : test::lora_bases()) QTest::newRow(b.c_str()) << QString::fromStdString(b);
    }

    void mixed_batch_reproduces_every_row() {
        QFETCH(QString, base);
        c10::InferenceMode guard;
        Fixture f = open_fixture(base.toStdString());
        const json& rec = f.base.records;
        const size_t runs = rec["runs"].size(), prompts = rec["prompts"].size();
        QVERIFY2(runs >= 4, "the oracle must record the base and at least three adapters");
        const int64_t steps = rec["max_new_tokens"].get<int64_t>();

        // Every adapter's greedy output differs from the base's somewhere: the adapters do something.
        for (size_t a = 1; a < runs; ++a)
            QVERIFY2(rec["runs"][a]["greedy"] != rec["runs"][0]["greedy"],
                     qPrintable(QString("adapter %1 does not change HF's output").arg(a)));

        std::vector<Row> interleaved, grouped;
        for (size_t p = 0; p < prompts; ++p)
            for (size_t r = 0; r < runs; ++r) interleaved.push_back({r, p});
        for (size_t r = 0; r < runs; ++r)
            for (size_t p = 0; p < prompts; ++p) grouped.push_back({r, p});

        const BatchResult mixed = run_rows(f, interleaved, steps);
        QVERIFY2(mixed.decode_cpu_loop_calls > 0, "the decoding steps did not take the CPU loop");
        for (size_t i = 0; i < interleaved.size(); ++i) check_row(rec, interleaved[i], mixed, i);
        const BatchResult contiguous = run_rows(f, grouped, steps);
        for (size_t i = 0; i < grouped.size(); ++i) check_row(rec, grouped[i], contiguous, i);

        // The paths of other devices: per-adapter products at prefill; in decoding steps every
        // adapter's factors stacked, one product pair per site.
        adapters::LoraStack stack;
        const BatchResult stacked = run_rows(f, interleaved, steps, &stack, /*cpu_loop=*/false);
        QVERIFY2(stack.bytes() > 0, "the decoding steps did not take the stacked path");
        for (size_t i = 0; i < interleaved.size(); ++i) check_row(rec, interleaved[i], stacked, i);

        // Alone: the same tokens as in the batch, and numbers as close as two runs that are each
        // within kLogitTolerance of HF's can be (oneDNN's sgemm rounds a 1-row product differently
        // from a 12-row one; 2e-4 apart on the t5 fixture, while both are within 1e-4 of HF).
        for (size_t i = 0; i < interleaved.size(); ++i) {
            const BatchResult alone = run_rows(f, {interleaved[i]}, steps);
            check_row(rec, interleaved[i], alone, 0);
            QCOMPARE(alone.argmax[0], mixed.argmax[i]);
            for (size_t s = 0; s < alone.logits[0].size(); ++s)
                QVERIFY2((alone.logits[0][s] - mixed.logits[i][s]).abs().max().item<double>() <= 2 * kLogitTolerance, qPrintable(QString("row %1 step %2: %3").arg(i).arg(s).arg((alone.logits[0][s] - mixed.logits[i][s]).abs().max().item<double>())));
        }
    }
};

QTEST_APPLESS_MAIN(TestLoraParity)
#include "test_lora_parity.moc"
