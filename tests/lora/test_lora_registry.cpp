// The adapter registry: what it reports for PEFT's adapters, clear errors for broken ones (with the
// registry still serving the good ones), LRU eviction under a memory budget with reload on demand,
// and unload waiting for the leases that pin an adapter.
#include <QtTest>

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "adapters/adapter_registry.h"
#include "adapters/multi_lora_hook.h"
#include "lora_records.h"
#include "lorascope/error.h"
#include "models/model.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

// Loading must fail with a lorascope::Error whose message contains every fragment.
void expect_load_error(adapters::AdapterRegistry& registry, const std::string& name, const std::string& dir,
                       const std::vector<std::string>& fragments) {
    try {
        registry.load(name, dir);
    } catch (const Error& e) {
        const std::string what = e.what();
        for (const auto& f : fragments)
            if (what.find(f) == std::string::npos)
                QFAIL(qPrintable(QString("error for %1 lacks '%2': %3").arg(name.c_str(), f.c_str(), what.c_str())));
        // Requests naming the adapter learn why it is not there.
        try {
            registry.acquire(name);
        } catch (const Error& again) {
            if (std::string(again.what()).find("failed to load") == std::string::npos)
                QFAIL(qPrintable(QString("acquire after a failed load: %1").arg(again.what())));
            return;
        }
        QFAIL("acquire of a failed adapter succeeded");
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("%1: not a lorascope::Error: %2").arg(name.c_str(), e.what())));
    }
    QFAIL(qPrintable(QString("%1 loaded without error").arg(name.c_str())));
}

// A copy of a good adapter directory that a test may damage.
std::string copy_adapter(const std::string& from, const QTemporaryDir& tmp, const std::string& name) {
    const fs::path to = fs::path(tmp.path().toStdString()) / name;
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), to / e.path().filename());
    return to.string();
}

// The registry still serves: a good adapter loads and its weights are usable by a hook.
void expect_still_serving(adapters::AdapterRegistry& registry, const std::string& dir) {
    static int counter = 0;
    const std::string name = "good" + std::to_string(counter++);
    registry.load(name, dir);
    auto lease = registry.acquire(name);
    QVERIFY(lease && lease.weights() && lease.weights()->bytes() > 0);
}

}  // namespace

class TestLoraRegistry : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void reports_rank_targets_parameters_and_warnings() {
        const auto base = test::load_lora_base("bloom");
        auto model = models::load_model(base.model_dir);
        adapters::AdapterRegistry registry(*model);
        const AdapterInfo all = registry.load("all", base.adapter_dir("all"));
        QCOMPARE(all.rank, int64_t(8));
        QCOMPARE(all.alpha, 16.0);
        const std::vector<std::string> expected = {"dense", "dense_4h_to_h", "dense_h_to_4h", "lm_head", "query_key_value"};
        QCOMPARE(all.targets, expected);
        QVERIFY(all.parameters > 0);
        QCOMPARE(all.bytes, all.parameters * int64_t(sizeof(float)));
        QVERIFY(all.loaded);
        QVERIFY2(all.warnings.empty(), all.warnings.empty() ? "" : all.warnings.front().c_str());

        const AdapterInfo small = registry.load("small", base.adapter_dir("small"));
        QCOMPARE(small.rank, int64_t(4));
        QCOMPARE(small.targets, std::vector<std::string>{"query_key_value"});
        bool warned = false;
        for (const auto& w : small.warnings) warned |= w.find("other-org/some-other-model") != std::string::npos;
        QVERIFY2(warned, "a base-model name mismatch must be reported as a warning");
        QCOMPARE(registry.list().size(), size_t(2));
        QCOMPARE(registry.resident_bytes(), all.bytes + small.bytes);
    }

    void broken_adapters_give_clear_errors_and_the_registry_keeps_serving() {
        const auto t5 = test::load_lora_base("t5");
        const auto bart = test::load_lora_base("bart");
        auto model = models::load_model(t5.model_dir);
        adapters::AdapterRegistry registry(*model);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string good = t5.adapter_dir("small");

        expect_load_error(registry, "nowhere", tmp.path().toStdString() + "/does-not-exist", {"adapter_config.json", "missing"});
        expect_still_serving(registry, good);

        const std::string no_weights = copy_adapter(good, tmp, "no_weights");
        fs::remove(fs::path(no_weights) / "adapter_model.safetensors");
        expect_load_error(registry, "no_weights", no_weights, {"adapter_model.safetensors", "missing"});

        expect_load_error(registry, "wrong_shapes", test::broken_adapter_dir("wrong_shapes"),
                          {"adapter_model.safetensors", "lora_A.weight", "shape", "input features"});
        expect_load_error(registry, "dora", test::broken_adapter_dir("dora"), {"adapter_config.json", "DoRA"});
        expect_load_error(registry, "bart_on_t5", bart.adapter_dir("all"),
                          {"adapter_model.safetensors", "_proj", "does not have", "another architecture"});
        expect_still_serving(registry, good);

        // Corrupt safetensors: a header length pointing past the end, then a truncated data section.
        const std::string bad_header = copy_adapter(good, tmp, "bad_header");
        {
            std::fstream f(bad_header + "/adapter_model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
            const uint64_t huge = 0x7fffffffull;
            f.write(reinterpret_cast<const char*>(&huge), sizeof huge);
        }
        expect_load_error(registry, "bad_header", bad_header, {"adapter_model.safetensors"});
        const std::string truncated = copy_adapter(good, tmp, "truncated");
        fs::resize_file(fs::path(truncated) / "adapter_model.safetensors",
                        fs::file_size(fs::path(truncated) / "adapter_model.safetensors") - 64);
        expect_load_error(registry, "truncated", truncated, {"adapter_model.safetensors"});
        expect_still_serving(registry, good);

        // Unknown names and duplicates.
        QVERIFY_EXCEPTION_THROWN(registry.acquire("never-loaded"), Error);
        registry.load("dup", good);
        QVERIFY_EXCEPTION_THROWN(registry.load("dup", good), Error);
        QVERIFY_EXCEPTION_THROWN(registry.unload("never-loaded"), Error);
    }

    // Llama-family adapters on the wrong base: the refusal names the module and the shape (qwen2 has
    // one key/value head where llama has two), or the architecture (a BLOOM adapter); an adapter of
    // the same shapes (llama's on mistral) loads, with a warning about its base.
    void llama_family_adapters_name_the_mismatch() {
        const auto qwen2 = test::load_lora_base("qwen2");
        const auto llama = test::load_lora_base("llama");
        const auto bloom = test::load_lora_base("bloom");
        auto model = models::load_model(qwen2.model_dir);
        adapters::AdapterRegistry registry(*model);
        expect_load_error(registry, "llama_on_qwen2", llama.adapter_dir("patterns"),
                          {"adapter_model.safetensors", "self_attn.k_proj.lora_B.weight", "shape", "output features"});
        expect_load_error(registry, "bloom_on_qwen2", bloom.adapter_dir("all"),
                          {"adapter_model.safetensors", "transformer.h.0.", "does not have", "Llama-family", "another architecture"});
        expect_still_serving(registry, qwen2.adapter_dir("all"));

        const auto mistral = test::load_lora_base("mistral");
        auto mistral_model = models::load_model(mistral.model_dir);
        adapters::AdapterRegistry on_mistral(*mistral_model);
        const AdapterInfo info = on_mistral.load("llama_on_mistral", llama.adapter_dir("small"));
        QCOMPARE(info.rank, int64_t(4));
        QVERIFY(!info.warnings.empty());
    }

    void budget_evicts_idle_adapters_lru_and_reloads_on_demand() {
        const auto base = test::load_lora_base("bart");
        auto model = models::load_model(base.model_dir);
        int64_t all_bytes = 0, rslora_bytes = 0;
        {
            adapters::AdapterRegistry probe(*model);
            all_bytes = probe.load("all", base.adapter_dir("all")).bytes;
            rslora_bytes = probe.load("rslora", base.adapter_dir("rslora")).bytes;
        }
        const int64_t budget = std::max(all_bytes, rslora_bytes) + std::min(all_bytes, rslora_bytes) / 2;
        adapters::AdapterRegistry registry(*model, budget);
        registry.load("all", base.adapter_dir("all"));
        at::Tensor before;
        {
            auto lease = registry.acquire("all");
            const int site = model->linear_sites().front().id;
            QVERIFY(lease.weights()->at_site(site));
            before = lease.weights()->at_site(site)->a.clone();
        }
        registry.load("rslora", base.adapter_dir("rslora"));   // evicts the idle, older "all"
        auto resident = [&](const std::string& name) {
            for (const auto& info : registry.list())
                if (info.name == name) return info.loaded;
            return false;
        };
        QVERIFY(!resident("all"));
        QVERIFY(resident("rslora"));
        QVERIFY(registry.resident_bytes() <= budget);

        {
            auto lease = registry.acquire("all");           // reloads "all", evicts idle "rslora"
            QVERIFY(resident("all"));
            QVERIFY(!resident("rslora"));
            const int site = model->linear_sites().front().id;
            QVERIFY(at::equal(lease.weights()->at_site(site)->a, before));
            // Pinned adapters stay resident even when that takes the total over the budget.
            auto second = registry.acquire("rslora");
            QVERIFY(resident("all") && resident("rslora"));
            QVERIFY(registry.resident_bytes() > budget);
        }
        registry.load("small", base.adapter_dir("small"));  // now both idle: LRU goes first
        QVERIFY(registry.resident_bytes() <= budget);
        QVERIFY(resident("small"));
    }

    void unload_waits_for_leases_and_refuses_new_ones() {
        const auto base = test::load_lora_base("t5");
        auto model = models::load_model(base.model_dir);
        adapters::AdapterRegistry registry(*model);
        registry.load("small", base.adapter_dir("small"));
        auto lease = std::make_unique<adapters::AdapterLease>(registry.acquire("small"));
        std::atomic<bool> unloaded{false};
        std::thread unloader([&] {
            registry.unload("small");
            unloaded = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        QVERIFY(!unloaded);
        QVERIFY(!registry.has("small"));
        try {
            registry.acquire("small");
            QFAIL("acquire while unloading succeeded");
        } catch (const Error& e) {
            QVERIFY(std::string(e.what()).find("being unloaded") != std::string::npos);
        }
        QVERIFY(lease->weights()->bytes() > 0);   // the running request still computes with it
        lease.reset();
        unloader.join();
        QVERIFY(unloaded);
        QVERIFY(registry.list().empty());
        QCOMPARE(registry.resident_bytes(), int64_t(0));
        registry.load("small", base.adapter_dir("small"));   // the name is free again
    }
};

QTEST_APPLESS_MAIN(TestLoraRegistry)
#include "test_lora_registry.moc"
