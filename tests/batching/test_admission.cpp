// Admission under max_batch_size and a token budget that counts padding; FCFS with bounded skips;
// a latency target's soft row limit; the queue packed by length (QueueOrder::Pack).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

#include "batching/admission.h"

using namespace lorascope::batching;

class TestAdmission : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cost_counts_padding() {
        BatchShape s;
        s = s.with({1, 1, 10, 5});
        s = s.with({2, 1, 3, 20});
        // Two rows padded to the longest prompt (10) and the largest budget of new tokens (20).
        QCOMPARE(s.cost(), 2 * (10 + 20));
    }

    void admits_in_order_until_full() {
        std::deque<Demand> q{{1, 1, 4, 4}, {2, 1, 4, 4}, {3, 1, 4, 4}};
        auto r = admit(q, {}, Limits{2, 1000, 8});
        QCOMPARE(r.admitted, (std::vector<uint64_t>{1, 2}));
        QCOMPARE(q.size(), size_t(1));
        QCOMPARE(q.front().id, uint64_t(3));
    }

    void token_budget_includes_running_batch() {
        std::deque<Demand> q{{7, 1, 10, 10}};
        BatchShape running{3, 10, 10};  // 60 positions already
        QVERIFY(admit(q, running, Limits{32, 79, 8}).admitted.empty());
        QCOMPARE(admit(q, running, Limits{32, 80, 8}).admitted, (std::vector<uint64_t>{7}));
    }

    void long_prompt_pads_everyone() {
        // One long prompt makes every row pay its padding: 3 rows x (100 + 4) > 300.
        std::deque<Demand> q{{1, 1, 4, 4}, {2, 1, 4, 4}, {3, 1, 100, 4}};
        auto r = admit(q, {}, Limits{32, 300, 8});
        QCOMPARE(r.admitted, (std::vector<uint64_t>{1, 2}));
        QCOMPARE(q.front().id, uint64_t(3));
    }

    void smaller_requests_pass_a_waiting_one_then_it_blocks() {
        std::deque<Demand> q{{1, 4, 10, 10}, {2, 1, 2, 2}};
        BatchShape running{1, 10, 10};
        Limits lim{4, 1000, 2};
        // Request 1 needs four rows but only three are free: request 2 may go ahead of it.
        auto r = admit(q, running, lim);
        QCOMPARE(r.admitted, (std::vector<uint64_t>{2}));
        q.push_back({3, 1, 2, 2});
        QCOMPARE(admit(q, running, lim).admitted, (std::vector<uint64_t>{3}));
        // Passed over twice already: from now on nothing overtakes it.
        q.push_back({4, 1, 2, 2});
        QVERIFY(admit(q, running, lim).admitted.empty());
        QCOMPARE(q.size(), size_t(2));
        // Once the running batch drains it goes first.
        QCOMPARE(admit(q, {}, lim).admitted, (std::vector<uint64_t>{1}));
    }

    void impossible_requests_are_rejected_not_queued_forever() {
        std::deque<Demand> q{{1, 5, 2, 2}, {2, 1, 500, 600}, {3, 1, 2, 2}};
        auto r = admit(q, {}, Limits{4, 1000, 8});
        QCOMPARE(r.rejected, (std::vector<uint64_t>{1, 2}));
        QCOMPARE(r.admitted, (std::vector<uint64_t>{3}));
        QVERIFY(q.empty());
    }

    // Costs that do not fit int64 saturate instead of wrapping: such a request can never fit and
    // is rejected, and the queue behind it goes on (issue 26: a wrapped, negative cost made the
    // KV accounting admit nothing ever again).
    void overflowing_costs_are_rejected_and_the_rest_admitted() {
        std::deque<Demand> q{{1, 1, 4, INT64_MAX}, {2, 2, INT64_MAX / 2, INT64_MAX / 2}, {3, 1, 4, 4}};
        QCOMPARE(BatchShape{}.with(q[0]).cost(), INT64_MAX);
        QCOMPARE(BatchShape{}.with(q[1]).cost(), INT64_MAX);
        auto r = admit(q, {}, Limits{4, 1000, 8});
        QCOMPARE(r.rejected, (std::vector<uint64_t>{1, 2}));
        QCOMPARE(r.admitted, (std::vector<uint64_t>{3}));
    }

    // A negative size is a bug upstream: asserted in debug builds, refused in release builds (the
    // request fails; nothing negative is ever reserved).
    void malformed_demands_are_refused_in_release_builds() {
#ifndef NDEBUG
        QSKIP("debug builds stop at a malformed demand (assert)");
#endif
        Demand negative_blocks{1, 1, 4, 4};
        negative_blocks.kv_blocks = -5;
        std::deque<Demand> q{negative_blocks, {2, 1, -3, 4}, {3, 0, 1, 1}, {4, 1, 4, 4}};
        auto r = admit(q, {}, Limits{4, 1000, 8});
        QCOMPARE(r.rejected, (std::vector<uint64_t>{1, 2, 3}));
        QCOMPARE(r.admitted, (std::vector<uint64_t>{4}));
    }

    // A latency target's row limit (Limits::rows_now) holds newcomers back without rejecting
    // them, and never keeps an empty batch empty.
    void the_soft_row_limit_queues_and_lets_the_first_in() {
        Limits lim{32, 1000, 8};
        lim.rows_now = 3;
        std::deque<Demand> q{{1, 1, 4, 4}, {2, 1, 4, 4}, {3, 2, 4, 4}};
        auto r = admit(q, BatchShape{2, 4, 4}, lim);
        QCOMPARE(r.admitted, (std::vector<uint64_t>{1}));
        QVERIFY(r.rejected.empty());
        QCOMPARE(q.size(), size_t(2));
        // An empty batch takes its first request even when it alone exceeds the limit.
        lim.rows_now = 1;
        std::deque<Demand> beams{{4, 2, 4, 4}, {5, 1, 4, 4}};
        r = admit(beams, {}, lim);
        QCOMPARE(r.admitted, (std::vector<uint64_t>{4}));
        QCOMPARE(beams.size(), size_t(1));
    }

    // QueueOrder::Pack: while more rows wait than the batch holds, each intake's requests shortest
    // first (a prompt token weighing what the caller says); once they fit, longest first (shortest
    // first under a target); ties and intakes in arrival order; beams count their rows.
    void the_queue_packs_by_length_within_an_intake() {
        auto demand = [](uint64_t id, int64_t rows, int64_t new_tokens, int64_t intake) {
            Demand d{id, rows, 4, new_tokens};
            d.intake = intake;
            return d;
        };
        const std::vector<Demand> queue{demand(1, 1, 10, 0), demand(2, 1, 50, 0), demand(3, 2, 30, 0),
                                        demand(4, 1, 50, 0), demand(5, 1, 90, 1), demand(6, 1, 5, 1)};
        // 7 rows wait, a batch of 6: 10, 30, 50, 50 (arrival order); then intake 1 after intake 0.
        QCOMPARE(packed_order(queue, 6), (std::vector<size_t>{0, 2, 1, 3, 5, 4}));
        // A batch of 7 or more: the batch's end, 50, 50, 30, 10; then intake 1.
        QCOMPARE(packed_order(queue, 7), (std::vector<size_t>{1, 3, 2, 0, 4, 5}));
        QCOMPARE(packed_order(queue, 32), (std::vector<size_t>{1, 3, 2, 0, 4, 5}));
        QVERIFY(packed_order({}, 32).empty());
        // Under a latency target the end joins shortest first too, whatever the batch holds.
        QCOMPARE(packed_order(queue, 7, /*end_longest_first=*/false), (std::vector<size_t>{0, 2, 1, 3, 5, 4}));
        QCOMPARE(packed_order(queue, 6, false), (std::vector<size_t>{0, 2, 1, 3, 5, 4}));

        // A prompt weight: shortest first by new tokens + weight x prompt tokens; the end longest
        // first by new tokens alone; a weight that is no number counts as none.
        auto prompted = [](uint64_t id, int64_t prompt, int64_t new_tokens) { return Demand{id, 1, prompt, new_tokens}; };
        const std::vector<Demand> prompts{prompted(1, 100, 10), prompted(2, 4, 20), prompted(3, 40, 12), prompted(4, 2, 30)};
        // Weight 0.5: 60, 22, 32, 31.
        QCOMPARE(packed_order(prompts, 3, true, 0.5), (std::vector<size_t>{1, 3, 2, 0}));
        QCOMPARE(packed_order(prompts, 3, true, 0), (std::vector<size_t>{0, 2, 1, 3}));
        QCOMPARE(packed_order(prompts, 3, true, std::nan("")), (std::vector<size_t>{0, 2, 1, 3}));
        QCOMPARE(packed_order(prompts, 3, true, -1), (std::vector<size_t>{0, 2, 1, 3}));
        QCOMPARE(packed_order(prompts, 4, true, 0.5), (std::vector<size_t>{3, 1, 2, 0}));
        QCOMPARE(packed_order(prompts, 4, false, 0.5), (std::vector<size_t>{1, 3, 2, 0}));
    }

    // The point of packing, on a batch the way the engine runs it (a step admits into free rows,
    // then every row decodes one token): 64 requests of 8-128 new tokens at once, 32 rows. Against
    // arrival order, the shortest first make the mean request finish sooner, and the end packed
    // longest first takes fewer steps, within 5% of the bound of such an order. The first wave is
    // the 32 shortest, the end joins longest first.
    void packing_finishes_sooner_in_fewer_steps() {
        std::vector<int64_t> lengths;
        uint64_t x = 7;
        for (int i = 0; i < 64; ++i) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // a fixed draw
            lengths.push_back(8 + static_cast<int64_t>((x >> 33) % 121));
        }
        struct Run {
            int64_t steps = 0, finish_sum = 0;
            std::vector<uint64_t> joined;
        };
        auto run = [&](bool pack) {
            Run r;
            std::deque<Demand> queue;
            for (size_t i = 0; i < lengths.size(); ++i) queue.push_back({i + 1, 1, 4, lengths[i]});
            std::map<uint64_t, int64_t> left;
            while (!queue.empty() || !left.empty()) {
                if (pack) {
                    const std::vector<Demand> view(queue.begin(), queue.end());
                    std::deque<Demand> ordered;
                    for (size_t i : packed_order(view, 32)) ordered.push_back(view[i]);
                    queue.swap(ordered);
                }
                BatchShape running{static_cast<int64_t>(left.size()), 4, 128};
                for (uint64_t id : admit(queue, running, Limits{32, 1 << 20, 8}).admitted) {
                    left[id] = lengths[id - 1];
                    r.joined.push_back(id);
                }
                ++r.steps;
                for (auto it = left.begin(); it != left.end();) {
                    if (--it->second > 0) {
                        ++it;
                        continue;
                    }
                    r.finish_sum += r.steps;
                    it = left.erase(it);
                }
            }
            return r;
        };
        const Run arrival = run(false), packed = run(true);
        int64_t tokens = 0;
        for (int64_t n : lengths) tokens += n;
        // No order that starts the shortest first takes fewer steps than all tokens over 32 rows,
        // nor than the longest request joining as the first row leaves.
        const int64_t bound = std::max((tokens + 31) / 32, *std::min_element(lengths.begin(), lengths.end()) +
                                                                *std::max_element(lengths.begin(), lengths.end()));
        qInfo("steps: arrival %lld, packed %lld, bound %lld; mean finish step: arrival %.1f, packed %.1f",
              static_cast<long long>(arrival.steps), static_cast<long long>(packed.steps), static_cast<long long>(bound),
              double(arrival.finish_sum) / 64, double(packed.finish_sum) / 64);
        QVERIFY(packed.steps < arrival.steps);
        QVERIFY2(packed.steps <= bound * 21 / 20, qPrintable(QString("packed %1 steps, bound %2").arg(packed.steps).arg(bound)));
        QVERIFY(packed.finish_sum < arrival.finish_sum);
        std::vector<int64_t> sorted = lengths;
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < 32; ++i) QVERIFY(lengths[packed.joined[i] - 1] <= sorted[31]);
        for (size_t i = 33; i < packed.joined.size(); ++i)
            QVERIFY(lengths[packed.joined[i - 1] - 1] >= lengths[packed.joined[i] - 1]);
    }
};

QTEST_APPLESS_MAIN(TestAdmission)
#include "test_admission.moc"
