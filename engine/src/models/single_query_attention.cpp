#include "models/single_query_attention.h"

#include <ATen/Parallel.h>

#include <limits>

namespace lorascope::models {

namespace {

// Eight partial sums so that the compiler can keep them in vector lanes; built for AVX2+FMA as
// well as the baseline ISA and picked at run time, so the binary still runs on older CPUs.
__attribute__((target_clones("avx2,fma", "default"))) float dot(const float* a, const float* b, int64_t n) {
    float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * b[i + j];
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * b[i];
    for (float p : partial) sum += p;
    return sum;
}

// out[0, n) += w * x[0, n)
__attribute__((target_clones("avx2,fma", "default"))) void axpy(float w, const float* x, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] += w * x[i];
}

}  // namespace

bool single_query_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    for (const at::Tensor* t : {&q, &k, &v})
        if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || t->dim() != 4 || t->stride(3) != 1) return false;
    return q.size(2) == 1 && k.size(2) == v.size(2) && k.size(3) == q.size(3) && v.size(3) == q.size(3) &&
           k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == q.size(1) && v.size(1) == q.size(1);
}

at::Tensor attend_single_query(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                               double score_scale, const std::vector<int64_t>* valid) {
    const int64_t B = q.size(0), H = q.size(1), L = k.size(2), D = q.size(3);
    const float scale = static_cast<float>(score_scale);
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    const int64_t qb = q.stride(0), qh = q.stride(1);
    const int64_t kb = k.stride(0), kh = k.stride(1), kl = k.stride(2);
    const int64_t vb = v.stride(0), vh = v.stride(1), vl = v.stride(2);
    TORCH_CHECK(!valid || static_cast<int64_t>(valid->size()) == B, "attend_single_query: ", valid ? valid->size() : 0,
                " valid lengths for ", B, " rows");
    auto keys_to_read = [&](int64_t b) {
        if (!valid) return L;
        const int64_t n = (*valid)[static_cast<size_t>(b)];
        return n >= 1 && n < L ? n : L;  // at least one key, or the softmax of a row would be NaN
    };

    at::Tensor scores = at::empty({B, H, 1, L}, q.options());
    float* sp = scores.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t b = i / H, h = i % H;
            const float* qi = qp + b * qb + h * qh;
            const float* ki = kp + b * kb + h * kh;
            float* si = sp + i * L;
            const int64_t n = keys_to_read(b);
            for (int64_t l = 0; l < n; ++l) si[l] = dot(qi, ki + l * kl, D);
            if (scale != 1.0f)
                for (int64_t l = 0; l < n; ++l) si[l] *= scale;
            for (int64_t l = n; l < L; ++l) si[l] = -std::numeric_limits<float>::infinity();
        }
    });
    // Bias and softmax are elementwise over [B, H, 1, L]: ATen's kernels are already good there.
    if (bias.defined()) scores.add_(bias);
    at::Tensor probs = at::softmax(scores, -1);
    const float* pp = probs.data_ptr<float>();

    at::Tensor out = at::zeros({B, 1, H, D}, q.options());
    float* op = out.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t b = i / H, h = i % H;
            const float* vi = vp + b * vb + h * vh;
            const float* pi = pp + i * L;
            float* oi = op + i * D;  // [B, 1, H, D] contiguous: (b, h) is row i
            const int64_t n = keys_to_read(b);
            for (int64_t l = 0; l < n; ++l)
                if (pi[l] != 0.0f) axpy(pi[l], vi + l * vl, oi, D);
        }
    });
    return out.view({B, 1, H * D});
}

}  // namespace lorascope::models
