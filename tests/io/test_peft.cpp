// PEFT adapters written by PEFT itself: the adapted modules, their rank and scaling (PEFT 0.13's
// rank/alpha pattern resolution and rsLoRA), PEFT's target decision for every module of the base
// model, and the lora_A/lora_B bytes.
#include <QtTest>

#include <ATen/ATen.h>

#include "io/peft.h"
#include "weights/safetensors_tensor.h"
#include "io_test_util.h"

using namespace lorascope;
using nlohmann::json;

class TestPeft : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void adapters_match_peft() {
        const std::string root = test::io_oracle_dir() + "/adapters";
        const json index = test::read_json_file(root + "/index.json");
        int checked = 0;
        for (const auto& name_json : index.at("adapters")) {
            const std::string name = name_json.get<std::string>();
            const json record = test::read_json_file(root + "/" + name + ".json");
            const std::string dir = root + "/" + name;
            const std::string cfg_text = test::read_file(dir + "/adapter_config.json");
            const json cfg = json::parse(cfg_text);
            if (cfg.value("use_dora", false) || !cfg.at("modules_to_save").is_null() || cfg.at("bias") != "none")
                continue;  // refused on purpose: see test_io_negative

            std::shared_ptr<io::PeftAdapter> adapter;
            try {
                adapter = io::PeftAdapter::open(dir);
            } catch (const Error& e) {
                QFAIL(e.what());
            }
            const json& modules = record.at("modules");
            QCOMPARE(adapter->modules().size(), modules.size());
            for (const auto& [module, m] : modules.items()) {
                const std::string where = name + ": " + module;
                const io::LoraModuleTensors* t = adapter->find(module);
                QVERIFY2(t, (where + " not indexed").c_str());
                QCOMPARE(t->rank, m.at("r").get<int64_t>());
                QCOMPARE(adapter->config().rank(module), m.at("r").get<int64_t>());
                QVERIFY2(t->scaling == m.at("scaling").get<double>(),
                         (where + " scaling " + std::to_string(t->scaling) + " vs " + m.at("scaling").dump()).c_str());
                QCOMPARE(t->a->shape, m.at("lora_A").at("shape").get<std::vector<int64_t>>());
                QCOMPARE(t->b->shape, m.at("lora_B").at("shape").get<std::vector<int64_t>>());
                for (const auto& [which, info] : {std::pair{"lora_A", t->a}, std::pair{"lora_B", t->b}}) {
                    at::Tensor f = weights::tensor_from_safetensors(*t->file, *info, at::kFloat, at::kCPU).contiguous();
                    QVERIFY2(test::sha256_hex(f.data_ptr(), f.numel() * 4) == m.at(which).at("sha256_f32").get<std::string>(),
                             (where + " " + which + " bytes differ").c_str());
                    QVERIFY2(f.abs().sum().item<float>() > 0, (where + " " + which + " is zero").c_str());
                }
            }
            QCOMPARE(adapter->parameter_count(), record.at("parameter_count").get<int64_t>());
            for (const auto& [module, expected] : record.at("targets").items())
                QVERIFY2(adapter->config().targets(module) == expected.get<bool>(),
                         (name + ": targets(" + module + ") should be " + expected.dump()).c_str());
            ++checked;
        }
        QVERIFY(checked >= 4);
    }
};

QTEST_APPLESS_MAIN(TestPeft)
#include "test_peft.moc"
