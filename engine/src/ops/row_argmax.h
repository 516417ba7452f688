// The index of each row's largest value, as torch.argmax(-1) gives it (the first maximal index on
// ties; the first NaN where a row has one, NaN counting as the largest), on our pool's threads.
//
// Why not ATen's: where the products run on our pool, ATen's operators get one thread
// (engine/compute_threads.h), and a greedy step's argmax over [32, 50265] scores took 1.3 ms of
// the engine thread on the 2-core Zen 4 (W2 in int8: 0.17 s of a 3.6 s run, while the pool's other
// thread waited). Rows are independent, so the result does not depend on the thread count.
//
// Torch-free.
#pragma once

#include <cstdint>

namespace lorascope::ops {

// out[i] = argmax over x[i * ld .. i * ld + cols), cols >= 1.
void argmax_rows(const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t* out);

}  // namespace lorascope::ops
