// Read bandwidth as issue 28 measures it: the sum of a 1 GiB float array with AVX2 loads (8 floats
// a load, four independent sums), by N threads each over its own contiguous part. Prints the median
// of 7 passes in GB/s (10^9 bytes) and the range. Built and run by scripts/bench-bandwidth.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
    const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
    const size_t bytes = mib << 20, n = bytes / sizeof(float);
    auto* data = static_cast<float*>(std::aligned_alloc(64, bytes));
    std::memset(data, 0, bytes);  // touch every page before timing
    std::vector<double> seconds;
    std::vector<float> sums(static_cast<size_t>(threads));
    for (int pass = 0; pass < 7; ++pass) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const size_t b = n / threads * t, e = t + 1 == threads ? n : n / threads * (t + 1);
                __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                for (size_t i = b; i + 32 <= e; i += 32) {
                    a0 = _mm256_add_ps(a0, _mm256_load_ps(data + i));
                    a1 = _mm256_add_ps(a1, _mm256_load_ps(data + i + 8));
                    a2 = _mm256_add_ps(a2, _mm256_load_ps(data + i + 16));
                    a3 = _mm256_add_ps(a3, _mm256_load_ps(data + i + 24));
                }
                float lanes[8];
                _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
                sums[static_cast<size_t>(t)] = lanes[0];
            });
        for (auto& t : pool) t.join();
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("%zu MiB, %d thread(s): %.1f GB/s (median of 7; %.1f-%.1f)%s\n", mib, threads, bytes / seconds[3] / 1e9,
                bytes / seconds.back() / 1e9, bytes / seconds[0] / 1e9, sums[0] != 0.0f ? "" : "");
    std::free(data);
}
