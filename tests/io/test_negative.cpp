// Malformed checkpoints and adapters, generated here: each gives a lorascope::Error of the right
// kind naming the file (and tensor); none crashes, including every truncation of a valid file and
// header byte corruptions.
#include <QtTest>

#include <ATen/ATen.h>

#include <random>

#include "io/peft.h"
#include "io/safetensors.h"
#include "weights/weight_store.h"
#include "io_test_util.h"
#include "lorascope/adapter.h"
#include "lorascope/config.h"

using namespace lorascope;
using test::expect_error;

namespace {

std::string le64(uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

// A safetensors file from a header text and a data section of `data_bytes` bytes.
std::string safetensors_bytes(const std::string& header, size_t data_bytes) {
    return le64(header.size()) + header + std::string(data_bytes, '\x01');
}

const char* kBloomConfig = R"({"model_type":"bloom","vocab_size":8,"hidden_size":4,"n_layer":1,"n_head":2})";

}  // namespace

class TestNegative : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

    std::string write(const std::string& name, const std::string& bytes) {
        const std::string path = tmp_.path().toStdString() + "/" + name;
        QDir().mkpath(QFileInfo(QString::fromStdString(path)).absolutePath());
        test::write_file(path, bytes);
        return path;
    }

    void expect_file_error(const std::string& name, const std::string& bytes, ErrorKind kind,
                           const std::vector<std::string>& needles) {
        const std::string path = write(name, bytes);
        std::vector<std::string> all = needles;
        all.push_back(path);
        expect_error([&] { io::SafetensorsFile::open(path); }, kind, all, name.c_str());
    }

private Q_SLOTS:
    void malformed_safetensors_files() {
        const auto F = ErrorKind::Format;
        expect_file_error("short.safetensors", "abc", F, {"too short"});
        expect_file_error("empty.safetensors", "", F, {"too short"});
        expect_file_error("header_longer.safetensors", le64(4096) + "{}", F, {"longer than"});
        expect_file_error("header_huge.safetensors", le64(uint64_t(1) << 40) + "{}", F, {"exceeds the limit"});
        expect_file_error("bad_json.safetensors", safetensors_bytes(R"({"a": {"dtype": "F32",)", 0), F, {"malformed JSON"});
        expect_file_error("not_object.safetensors", safetensors_bytes("[1, 2]", 0), F, {"not a JSON object"});
        expect_file_error("unknown_dtype.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F7", "shape": [2], "data_offsets": [0, 8]}})", 8), F,
                          {"'w'", "unknown dtype 'F7'"});
        expect_file_error("fp8.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", 2),
                          ErrorKind::Unsupported, {"'w'", "F8_E4M3"});
        expect_file_error("out_of_range.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 16), F,
                          {"'w'", "outside the data section"});
        expect_file_error("overlap.safetensors",
                          safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                            R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12),
                          F, {"'b'", "overlaps", "'a'"});
        expect_file_error("size_mismatch.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F16", "shape": [3, 2], "data_offsets": [0, 8]}})", 8), F,
                          {"'w'", "[3, 2]", "needs 12 bytes"});
        expect_file_error("reversed.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [4, 2]}})", 8), F,
                          {"'w'", "end before"});
        expect_file_error("negative_dim.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})", 1), F,
                          {"'w'", "negative"});
        expect_file_error("huge_shape.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 8], "data_offsets": [0, 0]}})", 0),
                          F, {"'w'", "too large"});
        expect_file_error("no_dtype.safetensors", safetensors_bytes(R"({"w": {"shape": [1], "data_offsets": [0, 1]}})", 1),
                          F, {"'w'", "dtype"});
        expect_file_error("offsets_shape.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", 1), F,
                          {"'w'", "data_offsets"});
        expect_file_error("metadata.safetensors", safetensors_bytes(R"({"__metadata__": {"a": 1}})", 0), F,
                          {"__metadata__"});
        expect_error([] { io::SafetensorsFile::open("/nonexistent/x.safetensors"); }, ErrorKind::NotFound,
                     {"/nonexistent/x.safetensors"}, "missing file");
    }

    void every_truncation_and_header_corruption_is_an_error_not_a_crash() {
        const std::string good = test::read_file(test::io_oracle_dir() + "/mixed_dtypes.safetensors");
        QVERIFY(good.size() > 100);
        for (size_t n = 0; n < good.size(); ++n) {
            const std::string path = write("truncated.safetensors", good.substr(0, n));
            bool threw = false;
            try {
                io::SafetensorsFile::open(path);
            } catch (const Error& e) {
                threw = std::string(e.what()).find(path) != std::string::npos;
            }
            QVERIFY2(threw, qPrintable(QString("truncation to %1 bytes not reported").arg(n)));
        }
        // Random byte changes inside the header: either a clean Error or a file that validates.
        const uint64_t header_len = static_cast<unsigned char>(good[0]) | (static_cast<unsigned char>(good[1]) << 8);
        std::mt19937 rng(1234);
        int errors = 0;
        for (int trial = 0; trial < 600; ++trial) {
            std::string bad = good;
            const int flips = 1 + static_cast<int>(rng() % 3);
            for (int f = 0; f < flips; ++f) bad[8 + rng() % header_len] = static_cast<char>(rng() & 0xff);
            const std::string path = write("corrupt.safetensors", bad);
            try {
                auto file = io::SafetensorsFile::open(path);
                for (const auto& t : file->tensors()) QVERIFY(t.end <= file->file_bytes());
            } catch (const Error&) {
                ++errors;
            }
        }
        QVERIFY(errors > 300);
    }

    void shard_index_problems() {
        const std::string shard = safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8);
        write("sharded/model-1.safetensors", shard);
        const std::string dir = tmp_.path().toStdString() + "/sharded";
        const std::string index = dir + "/model.safetensors.index.json";
        auto write_index = [&](const std::string& text) { test::write_file(index, text); };

        write_index(R"({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})");
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::NotFound,
                     {index, "model-2.safetensors", "'b'"}, "missing shard");
        write_index(R"({"weight_map": {"a": "model-1.safetensors", "c": "model-1.safetensors"}})");
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::Format,
                     {index, "'c'", "does not contain"}, "tensor absent from shard");
        write_index(R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::Format, {index, "'a'"},
                     "shard outside the directory");
        write_index(R"({"weight_map": {"a": )");
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::Format, {index, "malformed JSON"},
                     "malformed index");
        write_index(R"({"metadata": {}})");
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::Format, {index, "weight_map"},
                     "index without weight_map");
        write_index(R"({"weight_map": {"a": "model-1.safetensors"}})");
        auto ckpt = io::SafetensorsCheckpoint::open_dir(dir);
        QCOMPARE(ckpt->names(), std::vector<std::string>{"a"});
        // A corrupt shard is reported under its own name.
        write("sharded/model-1.safetensors", shard.substr(0, shard.size() - 3));
        expect_error([&] { io::SafetensorsCheckpoint::open_dir(dir); }, ErrorKind::Format,
                     {dir + "/model-1.safetensors", "'a'"}, "truncated shard");
    }

    void checkpoint_directories() {
        const ModelConfig config = parse_model_config(kBloomConfig, "config.json");
        const std::string pickle_dir = tmp_.path().toStdString() + "/pickle_only";
        write("pickle_only/config.json", kBloomConfig);
        write("pickle_only/pytorch_model.bin", "PK\x03\x04 not really a zip");
        expect_error([&] { weights::WeightStore::open(pickle_dir, config); }, ErrorKind::Unsafe,
                     {pickle_dir + "/pytorch_model.bin", "arbitrary code"}, "pickle refused");
        weights::WeightLoadOptions opt_in;
        opt_in.allow_pickle = true;
        expect_error([&] { weights::WeightStore::open(pickle_dir, config, opt_in); }, ErrorKind::Unsupported,
                     {"not implemented"}, "pickle opt-in not implemented");

        const std::string empty_dir = tmp_.path().toStdString() + "/no_weights";
        write("no_weights/config.json", kBloomConfig);
        expect_error([&] { weights::WeightStore::open(empty_dir, config); }, ErrorKind::NotFound,
                     {empty_dir, "model.safetensors"}, "no weights");

        const std::string ok_dir = tmp_.path().toStdString() + "/ok";
        write("ok/model.safetensors",
              safetensors_bytes(R"({"transformer.h.0.mlp.dense_h_to_4h.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8));
        auto store = weights::WeightStore::open(ok_dir, config);
        expect_error([&] { store->get("transformer.word_embeddings.weight"); }, ErrorKind::NotFound,
                     {ok_dir + "/model.safetensors", "transformer.word_embeddings.weight"}, "missing tensor");
        QVERIFY(store->contains("h.0.mlp.dense_h_to_4h.weight"));
    }

    void refused_adapters_written_by_peft() {
        const std::string root = test::io_oracle_dir() + "/adapters";
        expect_error([&] { io::PeftAdapter::open(root + "/bloom_dora"); }, ErrorKind::Unsupported,
                     {root + "/bloom_dora/adapter_config.json", "DoRA"}, "DoRA");
        expect_error([&] { io::PeftAdapter::open(root + "/bloom_modules_to_save"); }, ErrorKind::Unsupported,
                     {"adapter_config.json", "modules_to_save"}, "modules_to_save");
        expect_error([&] { io::PeftAdapter::open(root + "/bloom_lora_bias"); }, ErrorKind::Unsupported,
                     {"adapter_config.json", "bias"}, "trained bias");
    }

    void broken_adapter_directories() {
        const std::string good = test::io_oracle_dir() + "/adapters/bloom_lm_head";
        const std::string config_text = test::read_file(good + "/adapter_config.json");
        const std::string weights = test::read_file(good + "/adapter_model.safetensors");
        QVERIFY(!config_text.empty() && !weights.empty());
        const std::string base = tmp_.path().toStdString();

        write("ad_no_config/adapter_model.safetensors", weights);
        expect_error([&] { io::PeftAdapter::open(base + "/ad_no_config"); }, ErrorKind::NotFound,
                     {base + "/ad_no_config/adapter_config.json"}, "missing adapter_config.json");
        write("ad_no_weights/adapter_config.json", config_text);
        expect_error([&] { io::PeftAdapter::open(base + "/ad_no_weights"); }, ErrorKind::NotFound,
                     {base + "/ad_no_weights/adapter_model.safetensors"}, "missing weights");
        write("ad_pickle/adapter_config.json", config_text);
        write("ad_pickle/adapter_model.bin", "pickle");
        expect_error([&] { io::PeftAdapter::open(base + "/ad_pickle"); }, ErrorKind::Unsafe,
                     {base + "/ad_pickle/adapter_model.bin"}, "pickled adapter");
        write("ad_corrupt/adapter_config.json", config_text);
        write("ad_corrupt/adapter_model.safetensors", weights.substr(0, weights.size() / 2));
        expect_error([&] { io::PeftAdapter::open(base + "/ad_corrupt"); }, ErrorKind::Format,
                     {base + "/ad_corrupt/adapter_model.safetensors"}, "corrupt adapter safetensors");

        auto adapter_with = [&](const std::string& name, const std::string& config, const std::string& header,
                                size_t bytes) {
            write(name + "/adapter_config.json", config);
            write(name + "/adapter_model.safetensors", safetensors_bytes(header, bytes));
            return base + "/" + name;
        };
        const std::string lora_cfg = R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["dense"]})";
        const std::string a = R"("base_model.model.transformer.h.0.self_attention.dense.lora_A.weight": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]})";
        const std::string b = R"("base_model.model.transformer.h.0.self_attention.dense.lora_B.weight": {"dtype": "F32", "shape": [4, 2], "data_offsets": [32, 64]})";
        QCOMPARE(io::PeftAdapter::open(adapter_with("ad_ok", lora_cfg, "{" + a + ", " + b + "}", 64))->modules().size(),
                 size_t(1));
        std::string dir = adapter_with("ad_no_b", lora_cfg, "{" + a + "}", 32);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Format,
                     {dir + "/adapter_model.safetensors", "lora_A.weight", "no matching lora_B"}, "lora_A without B");
        dir = adapter_with("ad_rank", R"({"peft_type": "LORA", "r": 3, "target_modules": ["dense"]})",
                           "{" + a + ", " + b + "}", 64);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Format,
                     {"adapter_model.safetensors", "rank 2", "r=3"}, "rank disagrees with config");
        dir = adapter_with("ad_embedding", lora_cfg,
                           R"({"base_model.model.transformer.word_embeddings.lora_embedding_A": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]}})",
                           32);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                     {"adapter_model.safetensors", "lora_embedding_A", "embedding"}, "embedding LoRA");
        dir = adapter_with("ad_odd_name", lora_cfg,
                           R"({"base_model.model.transformer.h.0.self_attention.dense.lora_C.weight": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]}})",
                           32);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                     {"adapter_model.safetensors", "lora_C.weight", "unexpected"}, "unexpected tensor name");
        dir = adapter_with("ad_prefix", R"({"peft_type": "PREFIX_TUNING"})", "{" + a + ", " + b + "}", 64);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                     {dir + "/adapter_config.json", "PREFIX_TUNING"}, "non-LoRA peft_type");
        dir = adapter_with("ad_bad_json", R"({"peft_type": "LORA", "r": )", "{" + a + ", " + b + "}", 64);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Format,
                     {dir + "/adapter_config.json", "malformed JSON"}, "malformed adapter_config.json");
        dir = adapter_with("ad_regex", R"J({"peft_type": "LORA", "target_modules": "(?P<x>q)"})J", "{" + a + ", " + b + "}", 64);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                     {dir + "/adapter_config.json", "target_modules"}, "regex we cannot evaluate");
        // Patterns are untrusted: nested repetition backtracks exponentially in std::regex (a hang
        // on a 40-character module name), so it is refused; so are rank_pattern keys like it.
        for (const std::string pattern : {"(a+)+b", "(.*)*x", "((q|k)_proj.*){2,}z", "(?:[a-z]+\\\\.)*lm"}) {
            dir = adapter_with("ad_nested", R"({"peft_type": "LORA", "target_modules": ")" + pattern + R"("})",
                               "{" + a + ", " + b + "}", 64);
            expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                         {dir + "/adapter_config.json", "target_modules", "repeats a group"}, pattern.c_str());
        }
        dir = adapter_with("ad_nested_rank", R"({"peft_type": "LORA", "target_modules": ["dense"], "rank_pattern": {"(d+)+x": 4}})",
                           "{" + a + ", " + b + "}", 64);
        expect_error([&] { io::PeftAdapter::open(dir); }, ErrorKind::Unsupported,
                     {dir + "/adapter_config.json", "rank_pattern", "repeats a group"}, "nested rank_pattern key");
        // What PEFT writes stays accepted: single repeated atoms, alternations, lookahead.
        for (const std::string pattern : {".*decoder.*(SelfAttention|EncDecAttention).*(q|v)$", "^(?!.*lm_head).*dense$"}) {
            dir = adapter_with("ad_ok_regex", R"({"peft_type": "LORA", "target_modules": ")" + pattern + R"("})",
                               "{" + a + ", " + b + "}", 64);
            try {
                io::PeftAdapter::open(dir);
            } catch (const lorascope::Error& e) {
                QVERIFY2(QString(e.what()).indexOf("repeats a group") < 0, e.what());
            }
        }
    }

    // JSON nested 500,000 deep (1 MB) where a file holds a value the loader quotes in its error
    // message: refused while parsing, before any recursive copy or dump could overflow the stack
    // (before, a dump of such an adapter_config.json field was a SIGSEGV).
    void deeply_nested_json_is_refused_while_parsing() {
        const std::string deep = std::string(500000, '[') + std::string(500000, ']');
        const auto F = ErrorKind::Format;
        expect_file_error("deep.safetensors",
                          safetensors_bytes(R"({"w": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 8]}})", 8),
                          F, {"nested deeper than 64"});
        const std::string dir = tmp_.path().toStdString() + "/ad_deep";
        write("ad_deep/adapter_config.json", R"({"peft_type": "LORA", "modules_to_save": )" + deep + "}");
        expect_error([&] { io::PeftAdapter::open(dir); }, F, {dir + "/adapter_config.json", "nested deeper than 64"},
                     "deep adapter_config.json");
        const std::string model = tmp_.path().toStdString() + "/deep_model";
        write("deep_model/config.json", R"({"model_type": "bloom", "n_layer": )" + deep + "}");
        expect_error([&] { load_model_config(model); }, F, {model + "/config.json", "nested deeper than 64"},
                     "deep config.json");
        // 64 levels are still JSON this project reads.
        const std::string ok = std::string(63, '[') + std::string(63, ']');
        write("deep_ok/config.json", std::string(kBloomConfig).substr(0, std::string(kBloomConfig).size() - 1) +
                                         R"(, "x": )" + ok + "}");
        QCOMPARE(load_model_config(tmp_.path().toStdString() + "/deep_ok").family, Family::Bloom);
    }
};

QTEST_APPLESS_MAIN(TestNegative)
#include "test_negative.moc"
