// Safetensors written by Hugging Face load bit-exactly: every state_dict tensor (as the task class
// names it, so prefixes and tied weights resolve too) hashes to HF's own bytes, natively and after
// conversion to float32. Zero-copy where the dtype matches, and tensors outlive their store.
#include <QtTest>

#include <ATen/ATen.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "weights/safetensors_tensor.h"
#include "weights/weight_store.h"
#include "io_test_util.h"
#include "lorascope/config.h"

using namespace lorascope;
using nlohmann::json;

namespace {

std::string tensor_sha(const at::Tensor& t) {
    at::Tensor c = t.contiguous().cpu();
    return test::sha256_hex(c.data_ptr(), c.numel() * c.element_size());
}

at::ScalarType scalar_type_named(const std::string& name) {
    if (name == "F32") return at::kFloat;
    if (name == "F16") return at::kHalf;
    if (name == "BF16") return at::kBFloat16;
    if (name == "F64") return at::kDouble;
    throw std::runtime_error("not a floating dtype: " + name);
}

int64_t dir_safetensors_bytes(const std::string& dir) {
    int64_t total = 0;
    for (const auto& entry : QDir(QString::fromStdString(dir)).entryInfoList({"*.safetensors"}, QDir::Files))
        total += entry.size();
    return total;
}

}  // namespace

// Which stored tensors Hugging Face keeps in float32 when loading in `dtype` (T5's modules named
// "wo" under float16, transformers' T5PreTrainedModel._keep_in_fp32_modules).
static bool hf_keeps_in_float32(const ModelConfig& config, at::ScalarType dtype, const std::string& name) {
    if (config.family != Family::T5 || dtype != at::kHalf) return false;
    const std::string dotted = "." + name + ".";
    return dotted.find(".wo.") != std::string::npos;
}

class TestWeights : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hf_checkpoints_load_bit_exactly() {
        const std::string root = test::io_oracle_dir() + "/models";
        const json index = test::read_json_file(root + "/index.json");
        QVERIFY(index.at("models").size() >= 8);
        for (const auto& name_json : index.at("models")) {
            const std::string name = name_json.get<std::string>();
            const std::string dir = root + "/" + name;
            const json record = test::read_json_file(dir + ".json");
            const ModelConfig config = load_model_config(dir);

            std::string native_dtype;
            for (const auto& [fname, t] : record.at("file_tensors").items())
                if (t.contains("sha256_f32")) native_dtype = t.at("dtype").get<std::string>();
            weights::WeightLoadOptions as_f32;
            weights::WeightLoadOptions as_stored;
            as_stored.dtype = scalar_type_named(native_dtype);
            auto store_f32 = weights::WeightStore::open(dir, config, as_f32);
            auto store_native = weights::WeightStore::open(dir, config, as_stored);

            // Stored bytes, under the names the file uses.
            std::vector<std::string> file_names;
            for (const auto& [fname, t] : record.at("file_tensors").items()) {
                file_names.push_back(fname);
                const std::string where = name + ": stored " + fname;
                const at::Tensor native = store_native->get(fname);
                if (hf_keeps_in_float32(config, as_stored.dtype, fname)) {
                    // HF's _keep_in_fp32_modules: T5's "wo" stays float32 under float16, converted exactly.
                    QVERIFY2(native.scalar_type() == at::kFloat, where.c_str());
                    QVERIFY2(tensor_sha(native) == t.at("sha256_f32").get<std::string>(), (where + " float32 bytes differ").c_str());
                    continue;
                }
                QVERIFY2(native.scalar_type() == scalar_type_named(t.at("dtype").get<std::string>()), where.c_str());
                QVERIFY2(tensor_sha(native) == t.at("sha256_raw").get<std::string>(), (where + " bytes differ").c_str());
            }
            QCOMPARE(store_f32->file_tensor_names(), file_names);
            const auto absent = record.at("absent_from_file").get<std::vector<std::string>>();
            int checked = 0;
            for (const auto& [tname, t] : record.at("tensors").items()) {
                const std::string where = name + ": " + tname;
                if (std::find(absent.begin(), absent.end(), tname) != absent.end()) {
                    QVERIFY2(!store_f32->contains(tname), where.c_str());
                    test::expect_error([&] { store_f32->get(tname); }, ErrorKind::NotFound, {tname, dir},
                                       where.c_str());
                    continue;
                }
                QVERIFY2(store_f32->contains(tname), (where + " not resolved").c_str());
                const at::Tensor f32 = store_f32->get(tname);
                QVERIFY2(f32.scalar_type() == at::kFloat, where.c_str());
                QCOMPARE(std::vector<int64_t>(f32.sizes().begin(), f32.sizes().end()),
                         t.at("shape").get<std::vector<int64_t>>());
                QVERIFY2(tensor_sha(f32) == t.at("sha256_f32").get<std::string>(), (where + " float32 bytes differ").c_str());
                ++checked;
            }
            QVERIFY2(checked > 10, name.c_str());
            QCOMPARE(store_f32->file_bytes(), dir_safetensors_bytes(dir));
            QCOMPARE(store_f32->directory(), dir);
        }
    }

    void tied_names_share_one_tensor() {
        const std::string dir = test::io_oracle_dir() + "/models/t5_f16";
        auto store = weights::WeightStore::open(dir, load_model_config(dir));  // converted to float32
        const at::Tensor shared = store->get("shared.weight");
        QCOMPARE(store->get("lm_head.weight").data_ptr(), shared.data_ptr());
        QCOMPARE(store->get("encoder.embed_tokens.weight").data_ptr(), shared.data_ptr());
        // T5 v1.1 style (untied head): lm_head must come from the file, not from shared.
        const std::string gated = test::io_oracle_dir() + "/models/t5_gated_f32";
        auto untied = weights::WeightStore::open(gated, load_model_config(gated));
        QVERIFY(untied->get("lm_head.weight").data_ptr() != untied->get("shared.weight").data_ptr());
    }

    void zero_copy_when_dtype_matches() {
        const std::string path = test::io_oracle_dir() + "/models/bloom_f32/model.safetensors";
        auto file = io::SafetensorsFile::open(path);
        for (const auto& info : file->tensors()) {
            bool zero_copy = false;
            at::Tensor t = weights::tensor_from_safetensors(*file, info, at::kFloat, at::kCPU, &zero_copy);
            QVERIFY2(zero_copy, info.name.c_str());
            QCOMPARE(static_cast<const void*>(t.data_ptr()), static_cast<const void*>(file->data(info)));
            at::Tensor h = weights::tensor_from_safetensors(*file, info, at::kHalf, at::kCPU, &zero_copy);
            QVERIFY(!zero_copy);
            QVERIFY(h.scalar_type() == at::kHalf);
        }
    }

    void tensors_outlive_store_and_writes_stay_private() {
        const std::string dir = test::io_oracle_dir() + "/models/bloom_f32";
        const std::string file = dir + "/model.safetensors";
        const std::string before = test::sha256_hex(test::read_file(file).data(), test::read_file(file).size());
        at::Tensor t;
        {
            auto store = weights::WeightStore::open(dir, load_model_config(dir));
            t = store->get("transformer.word_embeddings.weight");
        }
        const float first = t.data_ptr<float>()[0];
        t.fill_(42.0f);  // copy-on-write: the file must not change
        QCOMPARE(t.data_ptr<float>()[0], 42.0f);
        QVERIFY(first != 42.0f);
        const std::string contents = test::read_file(file);
        QCOMPARE(test::sha256_hex(contents.data(), contents.size()), before);
    }

    void every_dtype_reads_exactly() {
        const std::string path = test::io_oracle_dir() + "/mixed_dtypes.safetensors";
        const json record = test::read_json_file(path + ".json");
        auto file = io::SafetensorsFile::open(path);
        QCOMPARE(file->metadata().at("format"), std::string("pt"));
        QCOMPARE(file->tensors().size(), record.at("tensors").size());
        for (const auto& [name, t] : record.at("tensors").items()) {
            const io::TensorInfo& info = file->at(name);
            QCOMPARE(std::string(io::to_string(info.dtype)), t.at("dtype").get<std::string>());
            QCOMPARE(info.shape, t.at("shape").get<std::vector<int64_t>>());
            const at::ScalarType stored = weights::scalar_type_of(info.dtype);
            const at::Tensor native = weights::tensor_from_safetensors(*file, info, stored, at::kCPU);
            QVERIFY2(tensor_sha(native) == t.at("sha256_raw").get<std::string>(), name.c_str());
            if (t.contains("sha256_f32")) {
                const at::Tensor f32 = weights::tensor_from_safetensors(*file, info, at::kFloat, at::kCPU);
                QVERIFY2(tensor_sha(f32) == t.at("sha256_f32").get<std::string>(), name.c_str());
            }
        }
    }

    void sharded_checkpoint_spans_every_shard() {
        const std::string dir = test::io_oracle_dir() + "/models/bloom_bf16_sharded";
        auto ckpt = io::SafetensorsCheckpoint::open_dir(dir);
        QVERIFY(ckpt->sharded());
        QVERIFY(ckpt->shards().size() > 2);
        QCOMPARE(ckpt->source_path(), dir + "/model.safetensors.index.json");
    }
};

QTEST_APPLESS_MAIN(TestWeights)
#include "test_weights.moc"
