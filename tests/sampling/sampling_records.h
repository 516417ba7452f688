// Reads what tests/oracle/sampling_oracle.py recorded (records.json + scores.bin).
#pragma once

#include <ATen/ATen.h>
#include <QtTest/QtTest>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lorascope/config.h"
#include "lorascope/params.h"
#include "lorascope/params_json.h"
#include "test_env.h"

namespace lorascope::test {

struct SamplingRecords {
    nlohmann::json json;
    std::vector<float> blob;

    at::Tensor floats(int64_t offset, int64_t rows, int64_t cols) const {
        const int64_t count = rows * cols;
        if (offset < 0 || offset + count > static_cast<int64_t>(blob.size()))
            throw std::runtime_error("scores.bin is shorter than records.json says");
        return at::from_blob(const_cast<float*>(blob.data() + offset), {rows, cols}, at::kFloat).clone();
    }
};

// Empty json when the oracle output is missing: callers QFAIL (never skip) on that.
inline SamplingRecords load_sampling_records() {
    SamplingRecords records;
    const std::string dir = oracle_dir() + "/sampling";
    std::ifstream json_in(dir + "/records.json");
    std::ifstream blob_in(dir + "/scores.bin", std::ios::binary | std::ios::ate);
    if (!json_in || !blob_in) return records;
    records.json = nlohmann::json::parse(json_in);
    const std::streamsize bytes = blob_in.tellg();
    blob_in.seekg(0);
    records.blob.resize(static_cast<size_t>(bytes) / sizeof(float));
    blob_in.read(reinterpret_cast<char*>(records.blob.data()), bytes);
    return records;
}

// The GenerationConfig fields the oracle sets, with HF's defaults for the rest (config.h).
inline GenerationConfig generation_config_from(const nlohmann::json& gc) {
    GenerationConfig c;
    if (gc.contains("eos_token_id")) {
        const auto& eos = gc["eos_token_id"];
        if (eos.is_array()) c.eos_token_ids = eos.get<std::vector<int64_t>>();
        else c.eos_token_ids = {eos.get<int64_t>()};
    }
    if (gc.contains("max_length")) c.max_length = gc["max_length"].get<int64_t>();
    if (gc.contains("min_length")) c.min_length = gc["min_length"].get<int64_t>();
    if (gc.contains("do_sample")) c.do_sample = gc["do_sample"].get<bool>();
    if (gc.contains("temperature")) c.temperature = gc["temperature"].get<double>();
    if (gc.contains("top_k")) c.top_k = gc["top_k"].get<int64_t>();
    if (gc.contains("top_p")) c.top_p = gc["top_p"].get<double>();
    if (gc.contains("decoder_start_token_id")) c.decoder_start_token_id = gc["decoder_start_token_id"].get<int64_t>();
    if (gc.contains("forced_bos_token_id")) c.forced_bos_token_id = gc["forced_bos_token_id"].get<int64_t>();
    if (gc.contains("forced_eos_token_id")) c.forced_eos_token_id = gc["forced_eos_token_id"].get<int64_t>();
    if (gc.contains("pad_token_id")) c.pad_token_id = gc["pad_token_id"].get<int64_t>();
    if (gc.contains("num_beams")) c.num_beams = gc["num_beams"].get<int64_t>();
    for (const auto& item : gc.items()) {
        static const char* known[] = {"eos_token_id", "max_length", "min_length", "do_sample", "temperature",
                                      "top_k", "top_p", "decoder_start_token_id", "forced_bos_token_id",
                                      "forced_eos_token_id", "pad_token_id", "num_beams"};
        bool ok = false;
        for (const char* k : known) ok = ok || item.key() == k;
        if (!ok) throw std::runtime_error("test reader does not map generation_config key " + item.key());
    }
    return c;
}

inline ResolvedGenerationParams resolved_from(const nlohmann::json& record) {
    return resolve(generation_params_from_json(record["params"], record["name"].get<std::string>()),
                   generation_config_from(record["generation_config"]));
}

// Finite entries within tolerance, -inf (and +inf) positions identical.
inline void compare_scores(const at::Tensor& ours, const at::Tensor& hf, const std::string& what) {
    QVERIFY2(ours.sizes() == hf.sizes(), what.c_str());
    at::Tensor ours_inf = ours.isinf(), hf_inf = hf.isinf();
    const int64_t mismatched_inf = ours_inf.ne(hf_inf).sum().item<int64_t>();
    QVERIFY2(mismatched_inf == 0,
             (what + ": " + std::to_string(mismatched_inf) + " entries differ in being infinite").c_str());
    QVERIFY2(ours.masked_select(ours_inf).equal(hf.masked_select(hf_inf)), (what + ": infinities differ in sign").c_str());
    at::Tensor finite = ~hf_inf;
    at::Tensor a = ours.masked_select(finite), b = hf.masked_select(finite);
    if (a.numel() == 0) return;
    const double worst = ((a - b).abs() / b.abs().clamp_min(1.0)).max().item<double>();
    QVERIFY2(worst <= 1e-5, (what + ": finite scores differ by up to " + std::to_string(worst)).c_str());
}

}  // namespace lorascope::test
