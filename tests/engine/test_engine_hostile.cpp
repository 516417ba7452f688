// What a hostile request does to the engine (issue 26), through the public API alone:
//  - sizes that would overflow (max_new_tokens 2^63-1, a billion beams) are refused at submit
//    with a message naming the limit, and the engine admits the next requests as before (a wrapped
//    KV block count once stopped admission for good);
//  - an eviction storm (adapters alternating under a memory budget smaller than one adapter)
//    keeps the process's threads and memory mappings flat (a loader thread per reload, joined only
//    at exit, added ~2 mappings and 8 MB of address space per reload).
#include <QtTest>

#include <dirent.h>

#include <fstream>
#include <limits>

#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"

using namespace lorascope;
using test::CollectingSink;

namespace {

int64_t count_entries(const char* dir) {
    int64_t n = 0;
    if (DIR* d = opendir(dir)) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

int64_t count_lines(const char* path) {
    std::ifstream in(path);
    int64_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

Request text_request(const std::string& text, const std::string& adapter, int64_t max_new_tokens) {
    Request r;
    r.prompt = text;
    r.adapter = adapter;
    r.params.max_new_tokens = max_new_tokens;
    return r;
}

const std::string kDemoT5 = std::string(LORASCOPE_TEST_DEMO_DIR) + "/t5";

}  // namespace

class TestEngineHostile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void overflowing_sizes_are_refused_and_the_engine_admits_on() {
        auto engine = test::make_engine(kDemoT5);
        auto sink = std::make_shared<CollectingSink>();
        const RequestId solo = engine->submit(text_request("sort: d b a c", "", 12), sink);
        QVERIFY(sink->wait_until(solo));
        const auto want = sink->get(solo).finishes.at(0).token_ids;

        Request huge = text_request("sort: d b a c", "", std::numeric_limits<int64_t>::max());
        Request beams = text_request("sort: d b a c", "", 4);
        beams.params.num_beams = int64_t(1) << 40;
        Request sample_rows = text_request("sort: d b a c", "", 4);
        sample_rows.params.do_sample = true;
        sample_rows.params.num_return_sequences = int64_t(1) << 40;
        std::vector<std::pair<RequestId, const char*>> refused;
        refused.emplace_back(engine->submit(huge, sink), "max_batch_tokens");
        refused.emplace_back(engine->submit(beams, sink), "max_batch_size");
        refused.emplace_back(engine->submit(sample_rows, sink), "max_batch_size");
        for (const auto& [id, needle] : refused) {
            QVERIFY(sink->wait_until(id));
            const FinishEvent f = sink->get(id).finishes.at(0);
            QCOMPARE(f.reason, FinishReason::Error);
            QVERIFY2(f.error.find(needle) != std::string::npos, f.error.c_str());
        }
        // The next requests are admitted and decode as before, several at once.
        std::vector<RequestId> next;
        for (int i = 0; i < 4; ++i) next.push_back(engine->submit(text_request("sort: d b a c", "", 12), sink));
        for (RequestId id : next) {
            QVERIFY(sink->wait_until(id));
            QCOMPARE(sink->get(id).finishes.at(0).token_ids, want);
        }
    }

    void an_eviction_storm_keeps_threads_and_mappings_flat() {
        auto options = test::engine_options(kDemoT5);
        options.adapter_memory_budget = 1;   // smaller than any adapter: every switch evicts and reloads
        auto engine = Engine::create(options);
        engine->load_adapter("upper", kDemoT5 + "/adapters/upper");
        engine->load_adapter("reverse", kDemoT5 + "/adapters/reverse");
        auto sink = std::make_shared<CollectingSink>();
        size_t submitted = 0;
        std::vector<RequestId> ids;
        auto storm = [&](int n) {
            for (int i = 0; i < n; ++i) {
                // One at a time: each request names the adapter the previous one evicted.
                const RequestId id = engine->submit(text_request("upper: shout this", i % 2 ? "upper" : "reverse", 2), sink);
                ids.push_back(id);
                ++submitted;
                if (!sink->wait_until(id)) return false;
            }
            return true;
        };
        QVERIFY(storm(20));   // warm-up: the loader thread, the allocator's arenas
        const int64_t threads = count_entries("/proc/self/task");
        const int64_t mappings = count_lines("/proc/self/maps");
        QVERIFY(storm(400));
        const int64_t threads_after = count_entries("/proc/self/task");
        const int64_t mappings_after = count_lines("/proc/self/maps");
        qInfo("threads %lld -> %lld, mappings %lld -> %lld over 400 reloads", static_cast<long long>(threads),
              static_cast<long long>(threads_after), static_cast<long long>(mappings), static_cast<long long>(mappings_after));
        for (RequestId id : ids) QVERIFY(sink->get(id).finishes.at(0).reason != FinishReason::Error);
        QCOMPARE(threads_after, threads);
        // A few mappings may come and go with the allocator; a thread per reload added 2 each.
        QVERIFY2(mappings_after <= mappings + 8, "the process's mappings grew with the reloads");
    }
};

QTEST_GUILESS_MAIN(TestEngineHostile)
#include "test_engine_hostile.moc"
