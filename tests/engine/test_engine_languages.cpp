// Requests that name their languages (issue 30) against Hugging Face, recorded by
// tests/oracle/languages_oracle.py on tiny random mBART-50 and NLLB models (legacy layout too)
// around the oracle's trained tokenizers: src_lang places the source code as HF's tokenizer does,
// tgt_lang is forced as the first generated token, as generate(forced_bos_token_id=...) does. HF
// ran each case alone; the engine runs every case of a model in one batch (different languages,
// greedy and beams side by side). Unknown codes are that request's error; the CLI takes the
// languages in its JSON Lines params and as flags, and `info` lists them. A text target to score is
// encoded as HF's text_target (Marian's target model too), by the engine and by `lorascope-cli score`.
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "cli_process.h"
#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"
#include "lorascope/params.h"
#include "lorascope/tokenizer.h"
#include "serve_protocol.h"
#include "test_env.h"

using json = nlohmann::json;
using lorascope::FinishReason, lorascope::Request, lorascope::RequestId, lorascope::test::CollectingSink;

namespace {

const char* const kModels[] = {"mbart50", "nllb", "nllb_legacy"};

using LanguageModel = lorascope::test::Variant;

LanguageModel load_model(const std::string& name) {
    return lorascope::test::load_oracle_model("languages", name, "oracle_languages");
}

Request text_request(const std::string& prompt, const json& params) {
    Request r;
    r.prompt = prompt;
    r.params = lorascope::parse_generation_params(params.dump(), "languages records");
    return r;
}

std::string write_lines(const QTemporaryDir& tmp, const std::vector<json>& lines) {
    const std::string path = tmp.filePath("requests.jsonl").toStdString();
    std::ofstream out(path);
    for (const json& l : lines) out << l.dump() << "\n";
    return path;
}

std::map<std::string, json> output_by_id(const std::string& out) {
    std::map<std::string, json> by_id;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) {
            json j = json::parse(line);
            by_id[j["id"].get<std::string>()] = j;
        }
    return by_id;
}

}  // namespace

class TestEngineLanguages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void languages_in_one_batch_equal_hf() {
        for (const char* name : kModels) {
            const LanguageModel m = load_model(name);
            auto engine = lorascope::test::make_engine(m.dir);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<RequestId> ids;
            const json& cases = m.records["cases"];
            for (const json& c : cases) ids.push_back(engine->submit(text_request(c["prompt"], c["params"]), sink));
            QVERIFY(sink->wait_finished(ids.size()));
            for (size_t i = 0; i < ids.size(); ++i) {
                const auto finish = sink->get(ids[i]).finishes.at(0);
                const std::string where = std::string(name) + " case " + std::to_string(i) + " " + cases[i]["params"].dump();
                QVERIFY2(finish.reason != FinishReason::Error, qPrintable(QString::fromStdString(where + ": " + finish.error)));
                QVERIFY2(finish.token_ids == cases[i]["tokens"].get<std::vector<int64_t>>(), qPrintable(QString::fromStdString(where)));
                QCOMPARE(finish.text, cases[i]["text"].get<std::string>());
                QCOMPARE(finish.usage.prompt_tokens, static_cast<int64_t>(cases[i]["input_ids"].size()));
            }
        }
    }

    // The same requests as ready ids (HF's own encoding of each): tgt_lang still steers them, and
    // equal tokens show that the text prompts above were encoded as HF encodes them.
    void ids_with_target_language_equal_hf() {
        const LanguageModel m = load_model("nllb_legacy");
        auto engine = lorascope::test::make_engine(m.dir);
        auto sink = std::make_shared<CollectingSink>();
        std::vector<RequestId> ids;
        const json& cases = m.records["cases"];
        for (const json& c : cases) {
            json params = c["params"];
            params.erase("src_lang");
            Request r;
            r.input_ids = c["input_ids"].get<std::vector<int64_t>>();
            r.params = lorascope::parse_generation_params(params.dump(), "languages records");
            ids.push_back(engine->submit(std::move(r), sink));
        }
        QVERIFY(sink->wait_finished(ids.size()));
        for (size_t i = 0; i < ids.size(); ++i)
            QVERIFY(sink->get(ids[i]).finishes.at(0).token_ids == cases[i]["tokens"].get<std::vector<int64_t>>());
    }

    void unknown_codes_are_the_requests_error() {
        const LanguageModel m = load_model("mbart50");
        auto engine = lorascope::test::make_engine(m.dir);
        auto sink = std::make_shared<CollectingSink>();
        const json& good = m.records["cases"][0];
        Request bad_source = text_request("Hello", {{"src_lang", "xx_YY"}, {"max_new_tokens", 4}});
        bad_source.client_id = "bad-source";
        Request bad_target = text_request("Hello", {{"tgt_lang", "eng_Latn"}, {"max_new_tokens", 4}});
        bad_target.client_id = "bad-target";
        Request ids_with_source;
        ids_with_source.input_ids = good["input_ids"].get<std::vector<int64_t>>();
        ids_with_source.params.src_lang = "de_DE";
        const RequestId a = engine->submit(std::move(bad_source), sink);
        const RequestId ok = engine->submit(text_request(good["prompt"], good["params"]), sink);
        const RequestId b = engine->submit(std::move(bad_target), sink);
        const RequestId c = engine->submit(std::move(ids_with_source), sink);
        QVERIFY(sink->wait_finished(4));
        for (auto [id, code, who] : {std::tuple{a, "'xx_YY'", "request bad-source"}, {b, "'eng_Latn'", "request bad-target"}}) {
            const auto f = sink->get(id).finishes.at(0);
            QCOMPARE(f.reason, FinishReason::Error);
            for (const char* part : {code, who, "52 language codes", "ar_AR, cs_CZ, de_DE, en_XX, es_XX, ..."})
                QVERIFY2(f.error.find(part) != std::string::npos, qPrintable(QString::fromStdString(f.error)));
            QVERIFY2(f.error.find(m.dir) == std::string::npos, qPrintable(QString::fromStdString(f.error)));
        }
        const auto ids_error = sink->get(c).finishes.at(0);
        QCOMPARE(ids_error.reason, FinishReason::Error);
        QVERIFY(ids_error.error.find("src_lang") != std::string::npos);
        QVERIFY(sink->get(ok).finishes.at(0).token_ids == good["tokens"].get<std::vector<int64_t>>());
        // Bounded and typed at parsing, before any engine sees them.
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::parse_generation_params(R"({"tgt_lang": 7})"));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::parse_generation_params(R"({"src_lang": ""})"));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error,
                                 lorascope::parse_generation_params(json{{"src_lang", std::string(40, 'x')}}.dump()));
    }

    void cli_takes_languages_in_params_and_flags() {
        const LanguageModel m = load_model("nllb");
        const json& cases = m.records["cases"];
        // Case 0 as given; case 1's languages from the flags; case 2 overrides the flags; case 3
        // (input_ids) takes --tgt-lang but not --src-lang.
        const json c0 = cases[0], c1 = cases[1], c2 = cases[2];
        std::vector<json> lines = {
            {{"id", "0"}, {"prompt", c0["prompt"]}, {"params", c0["params"]}},
            {{"id", "1"}, {"prompt", c1["prompt"]}, {"params", {{"max_new_tokens", c1["params"]["max_new_tokens"]}}}},
            {{"id", "2"}, {"prompt", c2["prompt"]}, {"params", c2["params"]}},
            {{"id", "3"}, {"input_ids", c1["input_ids"]}, {"params", {{"max_new_tokens", c1["params"]["max_new_tokens"]}}}},
            {{"id", "4"}, {"prompt", "x"}, {"params", {{"tgt_lang", "klingon"}}}},
        };
        QTemporaryDir tmp;
        const auto r = lorascope::test::run_cli_command(
            {"generate", "--model", QString::fromStdString(m.dir), "--threads", "1", "--input",
             QString::fromStdString(write_lines(tmp, lines)), "--src-lang", QString::fromStdString(c1["params"]["src_lang"]),
             "--tgt-lang", QString::fromStdString(c1["params"]["tgt_lang"])});
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        auto out = output_by_id(r.out);
        QCOMPARE(out.size(), size_t(5));
        for (auto [id, c] : {std::pair{"0", &c0}, {"1", &c1}, {"2", &c2}, {"3", &c1}})
            QVERIFY2(out[id]["token_ids"] == (*c)["tokens"], qPrintable(QString::fromStdString(out[id].dump())));
        QCOMPARE(out["4"]["finish_reason"].get<std::string>(), std::string("error"));
        QVERIFY(out["4"]["error"].get<std::string>().find("'klingon'") != std::string::npos);
    }

    // serve's LoRAX parameters and OpenAI fields: the prompt encoded with src_lang as HF encodes it,
    // tgt_lang left for the engine to force; an unknown code a 422 without the model's path.
    void serve_takes_languages() {
        const LanguageModel m = load_model("nllb");
        const json& c = m.records["cases"][1];
        const auto tokenizer = lorascope::load_tokenizer(m.dir);
        lorascope::serve::ServedModel served;
        served.model_id = "nllb";
        json lorax = {{"inputs", c["prompt"]},
                      {"parameters", {{"src_lang", c["params"]["src_lang"]}, {"tgt_lang", c["params"]["tgt_lang"]}}}};
        json openai = {{"model", "nllb"}, {"prompt", c["prompt"]}, {"src_lang", c["params"]["src_lang"]},
                       {"tgt_lang", c["params"]["tgt_lang"]}};
        for (auto parsed : {lorascope::serve::parse_lorax_request(lorax, served, false),
                            lorascope::serve::parse_openai_completion(openai, served)}) {
            lorascope::serve::fit_to_budget(parsed, served, tokenizer.get());
            QVERIFY(parsed.request.input_ids == c["input_ids"].get<std::vector<int64_t>>());
            QVERIFY(!parsed.request.params.src_lang);
            QCOMPARE(*parsed.request.params.tgt_lang, c["params"]["tgt_lang"].get<std::string>());
        }
        lorax["parameters"]["src_lang"] = "xx_Yyyy";
        auto bad = lorascope::serve::parse_lorax_request(lorax, served, false);
        try {
            lorascope::serve::fit_to_budget(bad, served, tokenizer.get());
            QFAIL("an unknown src_lang was accepted");
        } catch (const lorascope::serve::HttpError& e) {
            const std::string what = e.what();
            QCOMPARE(e.status(), 422);
            QVERIFY2(what.find("'xx_Yyyy'") != std::string::npos && what.find(m.dir) == std::string::npos, e.what());
        }
    }

    // A text target is encoded as HF's tokenizer(prompt, text_target=target): mBART-50's and NLLB's
    // tgt_lang code where their target layout puts it (the request's, else tokenizer_config.json's),
    // Marian's target SentencePiece model. The engine's prompt_logprobs (every model's cases in one
    // batch) and `lorascope-cli score` score HF's labels with HF's loss.
    void score_targets_encode_as_hf_text_target() {
        int scored = 0;
        for (const char* name : {"mbart50", "nllb", "nllb_legacy", "marian"}) {
            const LanguageModel m = load_model(name);
            const json& cases = m.records["scores"];
            auto engine = lorascope::test::make_engine(m.dir);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<RequestId> ids;
            std::vector<json> lines;
            for (const json& c : cases) {
                json params = c["params"];
                params["max_new_tokens"] = 1;
                params["prompt_logprobs"] = true;
                Request r = text_request(c["prompt"], params);
                r.target = c["target"].get<std::string>();
                ids.push_back(engine->submit(std::move(r), sink));
                json line = {{"id", std::to_string(lines.size())}, {"source", c["prompt"]}, {"target", c["target"]}};
                line.update(c["params"]);
                lines.push_back(line);
            }
            QVERIFY(sink->wait_finished(ids.size()));
            QTemporaryDir tmp;
            const auto cli = lorascope::test::run_cli_command({"score", "--model", QString::fromStdString(m.dir),
                                                               "--threads", "1", "--input",
                                                               QString::fromStdString(write_lines(tmp, lines))});
            QVERIFY2(cli.exit_code == 0, cli.err.c_str());
            auto cli_out = output_by_id(cli.out);
            for (size_t i = 0; i < ids.size(); ++i, ++scored) {
                const json& c = cases[i];
                const std::string where = std::string(name) + " score " + std::to_string(i) + " " + c["params"].dump();
                const auto f = sink->get(ids[i]).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, qPrintable(QString::fromStdString(where + ": " + f.error)));
                QCOMPARE(f.usage.prompt_tokens, static_cast<int64_t>(c["input_ids"].size()));
                std::vector<int64_t> tokens;
                double sum = 0;
                for (const auto& t : f.prompt_logprobs) {
                    tokens.push_back(t.token_id);
                    QVERIFY2(t.logprob, qPrintable(QString::fromStdString(where)));
                    sum += *t.logprob;
                }
                QVERIFY2(tokens == c["labels"].get<std::vector<int64_t>>(),
                         qPrintable(QString::fromStdString(where + ": ours " + json(tokens).dump() + ", HF " +
                                                           c["labels"].dump())));
                const double loss = -sum / static_cast<double>(tokens.size()), hf = c["loss"].get<double>();
                QVERIFY2(std::abs(loss - hf) <= 1e-4, qPrintable(QString::fromStdString(
                                                          where + ": loss " + std::to_string(loss) + ", HF " + std::to_string(hf))));
                const json& line = cli_out[std::to_string(i)];
                QVERIFY2(line.contains("loss"), qPrintable(QString::fromStdString(where + " CLI: " + line.dump())));
                QCOMPARE(line["scored_tokens"].get<size_t>(), tokens.size());
                QVERIFY2(std::abs(line["loss"].get<double>() - hf) <= 1e-4,
                         qPrintable(QString::fromStdString(where + " CLI: loss " + line["loss"].dump() + ", HF " +
                                                           std::to_string(hf))));
            }
        }
        QVERIFY(scored >= 15);
    }

    void info_lists_the_languages() {
        for (const char* name : {"mbart50", "nllb"}) {
            const LanguageModel m = load_model(name);
            const auto r = lorascope::test::run_cli_command({"info", "--model", QString::fromStdString(m.dir)});
            QVERIFY2(r.exit_code == 0, r.err.c_str());
            const json languages = json::parse(r.out)["tokenizer"]["languages"];
            QCOMPARE(languages["codes"], m.records["language_codes"]);
            QCOMPARE(languages["count"].get<size_t>(), m.records["language_codes"].size());
            QCOMPARE(languages["use"].get<std::string>(), std::string("src_lang / tgt_lang request parameters"));
        }
    }
};

QTEST_GUILESS_MAIN(TestEngineLanguages)
#include "test_engine_languages.moc"
