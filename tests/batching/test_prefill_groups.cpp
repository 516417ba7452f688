// Splitting one step's newcomers into prefill passes of similar prompt length.
#include <QtTest>

#include <algorithm>

#include "batching/prefill_groups.h"

using namespace lorascope::batching;

namespace {

using Passes = std::vector<std::vector<size_t>>;

// Padded positions plus the per-pass charge: what prefill_groups minimises.
int64_t cost(const Passes& passes, const std::vector<int64_t>& len, const std::vector<int64_t>& rows, int64_t per_pass) {
    int64_t total = 0;
    for (const auto& p : passes) {
        int64_t longest = 0, r = 0;
        for (size_t i : p) {
            longest = std::max(longest, len[i]);
            r += rows[i];
        }
        total += r * longest + per_pass;
    }
    return total;
}

// The least cost over every contiguous split of the requests sorted by length (the search space
// prefill_groups works in) that `allowed` accepts: the exhaustive reference for small batches.
template <typename Allowed>
int64_t cheapest_split(const std::vector<int64_t>& len, const std::vector<int64_t>& rows, int64_t per_pass,
                       Allowed allowed) {
    std::vector<size_t> order(len.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return len[a] < len[b]; });
    int64_t best = -1;
    for (unsigned cuts = 0; cuts < (1u << (order.size() - 1)); ++cuts) {
        Passes candidate(1);
        for (size_t i = 0; i < order.size(); ++i) {
            if (i > 0 && (cuts >> (i - 1)) & 1u) candidate.emplace_back();
            candidate.back().push_back(order[i]);
        }
        if (!allowed(candidate)) continue;
        const int64_t c = cost(candidate, len, rows, per_pass);
        if (best < 0 || c < best) best = c;
    }
    return best;
}

}  // namespace

class TestPrefillGroups : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void similar_lengths_share_one_pass() {
        const auto p = prefill_groups({10, 12, 11}, {1, 1, 1}, 64);
        QCOMPARE(p, (Passes{{0, 2, 1}}));
    }

    void far_apart_lengths_split_when_padding_outweighs_a_pass() {
        // One pass: 4 x 120 = 480 + 64. Two passes: 3 x 10 + 64 + 120 + 64 = 278.
        const auto p = prefill_groups({120, 8, 10, 9}, {1, 1, 1, 1}, 64);
        QCOMPARE(p, (Passes{{1, 3, 2}, {0}}));
    }

    void a_costly_pass_keeps_everyone_together() {
        const auto p = prefill_groups({120, 8, 10, 9}, {1, 1, 1, 1}, 1000);
        QCOMPARE(p.size(), size_t(1));
        QCOMPARE(p[0].size(), size_t(4));
    }

    void beams_weigh_their_rows_and_stay_whole() {
        // Request 1 has 4 beam rows: padding it to 100 would cost 4 x 95.
        const auto p = prefill_groups({100, 5}, {1, 4}, 64);
        QCOMPARE(p, (Passes{{1}, {0}}));
    }

    void equal_lengths_keep_queue_order() {
        const auto p = prefill_groups({7, 7, 7}, {1, 1, 1}, 64);
        QCOMPARE(p, (Passes{{0, 1, 2}}));
    }

    void every_request_in_exactly_one_pass_at_least_cost() {
        // Exhaustive check over all contiguous splits of the sorted order for a mixed batch.
        const std::vector<int64_t> len{33, 8, 127, 64, 9, 100, 15, 70};
        const std::vector<int64_t> rows{1, 2, 1, 1, 3, 1, 1, 2};
        const auto p = prefill_groups(len, rows, 64);
        std::vector<size_t> seen;
        for (const auto& pass : p) seen.insert(seen.end(), pass.begin(), pass.end());
        std::sort(seen.begin(), seen.end());
        QCOMPARE(seen, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
        QCOMPARE(cost(p, len, rows, 64), cheapest_split(len, rows, 64, [](const Passes&) { return true; }));
    }

    void a_position_limit_splits_passes_that_would_exceed_it() {
        // 32 newcomers of 100 tokens: one pass of 3200 positions is cheapest, but the limit of
        // 1024 allows 10 rows (1000 positions) per pass at most.
        const std::vector<int64_t> len(32, 100), rows(32, 1);
        QCOMPARE(prefill_groups(len, rows, 64).size(), size_t(1));
        const auto p = prefill_groups(len, rows, 64, 1024);
        QCOMPARE(p.size(), size_t(4));
        size_t total = 0;
        for (const auto& pass : p) {
            QVERIFY(static_cast<int64_t>(pass.size()) * 100 <= 1024);
            total += pass.size();
        }
        QCOMPARE(total, size_t(32));
    }

    void a_request_over_the_limit_still_gets_a_pass_of_its_own() {
        const auto p = prefill_groups({2000, 10, 3000}, {1, 1, 2}, 64, 1024);
        QCOMPARE(p, (Passes{{1}, {0}, {2}}));
    }

    void the_limited_split_is_the_cheapest_within_the_limit() {
        // Exhaustive, as above, over the splits whose passes all fit (or are single requests).
        const std::vector<int64_t> len{33, 8, 127, 64, 9, 100, 15, 70};
        const std::vector<int64_t> rows{4, 2, 1, 3, 3, 1, 1, 2};
        const int64_t limit = 200;
        const auto p = prefill_groups(len, rows, 64, limit);
        auto fits = [&](const Passes& passes) {
            for (const auto& pass : passes) {
                int64_t longest = 0, r = 0;
                for (size_t i : pass) {
                    longest = std::max(longest, len[i]);
                    r += rows[i];
                }
                if (pass.size() > 1 && r * longest > limit) return false;
            }
            return true;
        };
        QVERIFY(fits(p));
        QCOMPARE(cost(p, len, rows, 64), cheapest_split(len, rows, 64, fits));
    }

    void empty_input_gives_no_pass() { QVERIFY(prefill_groups({}, {}, 64).empty()); }
};

QTEST_APPLESS_MAIN(TestPrefillGroups)
#include "test_prefill_groups.moc"
