// Each rope type below is modeling_rope_utils.py (transformers 4.46) operation by operation. Python
// spellings and their ATen equivalents: `1.0 / t` is t.reciprocal() * 1.0 (Tensor.__rtruediv__),
// `s - t` is rsub(t, s), `python_float ** t` is pow(Scalar, t); Python floats stay double until an
// operation with a tensor rounds them, as they do there.
#include "models/rotary.h"

#include <cmath>

#include "lorascope/error.h"
#include "models/position_bias.h"

namespace lorascope::models {

namespace {

const at::TensorOptions kFloat32 = at::TensorOptions().dtype(at::kFloat);

// torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
at::Tensor exponents(int64_t dim) {
    return at::div(at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat), at::Scalar(dim));
}

at::Tensor one_over(const at::Tensor& t) { return at::mul(at::reciprocal(t), at::Scalar(1.0)); }

// _compute_default_rope_parameters
at::Tensor default_inv_freq(double base, int64_t dim) { return one_over(at::pow(at::Scalar(base), exponents(dim))); }

// _compute_yarn_parameters; returns the frequencies and sets the attention factor.
at::Tensor yarn_inv_freq(const LlamaConfig& c, const RopeScaling& s, int64_t dim, double& attention) {
    const double base = c.rope_theta, factor = s.factor;
    const auto max_positions = static_cast<double>(c.max_position_embeddings);
    attention = s.attention_factor.value_or(0.1 * std::log(factor) + 1.0);
    // `x or default`: a zero beta counts as absent there too.
    const double beta_fast = s.beta_fast && *s.beta_fast != 0 ? *s.beta_fast : 32.0;
    const double beta_slow = s.beta_slow && *s.beta_slow != 0 ? *s.beta_slow : 1.0;
    auto correction_dim = [&](double rotations) {
        return (static_cast<double>(dim) * std::log(max_positions / (rotations * 2 * M_PI))) / (2 * std::log(base));
    };
    const auto low = std::max<int64_t>(static_cast<int64_t>(std::floor(correction_dim(beta_fast))), 0);
    const auto high = std::min<int64_t>(static_cast<int64_t>(std::ceil(correction_dim(beta_slow))), dim - 1);

    at::Tensor pos_freqs = at::pow(at::Scalar(base), exponents(dim));
    at::Tensor extrapolation = one_over(pos_freqs);
    at::Tensor interpolation = one_over(at::mul(pos_freqs, at::Scalar(factor)));
    at::Tensor linear = at::sub(at::arange(dim / 2, kFloat32), at::Scalar(low));
    // linear_ramp_factor: `max += 0.001` when min == max turns the divisor into a float.
    linear = low == high ? at::div(linear, at::Scalar(static_cast<double>(high) + 0.001 - static_cast<double>(low)))
                         : at::div(linear, at::Scalar(high - low));
    at::Tensor extrapolation_factor = at::rsub(at::clamp(linear, 0, 1), 1);
    return at::add(at::mul(interpolation, at::rsub(extrapolation_factor, 1)), at::mul(extrapolation, extrapolation_factor));
}

// _compute_longrope_parameters at load (seq_len None: 4.46 never updates it for these classes).
at::Tensor longrope_inv_freq(const LlamaConfig& c, const RopeScaling& s, int64_t dim, double& attention) {
    double factor = s.factor;
    double max_positions = static_cast<double>(c.max_position_embeddings);
    double expanded = 0;
    if (c.original_max_position_embeddings) {
        expanded = static_cast<double>(c.max_position_embeddings);
        max_positions = static_cast<double>(*c.original_max_position_embeddings);
        factor = expanded / max_positions;
    } else {
        expanded = max_positions * factor;
    }
    if (s.attention_factor) attention = *s.attention_factor;
    else attention = factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(max_positions));
    const std::vector<double>& chosen = expanded > max_positions ? s.long_factor : s.short_factor;
    std::vector<float> ext(chosen.begin(), chosen.end());
    at::Tensor ext_factors = at::tensor(ext, kFloat32);
    return one_over(at::mul(ext_factors, at::pow(at::Scalar(c.rope_theta), exponents(dim))));
}

// _compute_llama3_parameters
at::Tensor llama3_inv_freq(const LlamaConfig& c, const RopeScaling& s, int64_t dim) {
    at::Tensor inv_freq = default_inv_freq(c.rope_theta, dim);
    const double factor = s.factor, low = s.low_freq_factor, high = s.high_freq_factor;
    const int64_t old_context = *s.original_max_position_embeddings;
    const double low_freq_wavelen = static_cast<double>(old_context) / low;
    const double high_freq_wavelen = static_cast<double>(old_context) / high;
    at::Tensor wavelen = at::mul(at::reciprocal(inv_freq), at::Scalar(2 * M_PI));
    at::Tensor scaled = at::where(at::gt(wavelen, at::Scalar(low_freq_wavelen)), at::div(inv_freq, at::Scalar(factor)), inv_freq);
    at::Tensor smooth = at::div(at::sub(at::mul(at::reciprocal(wavelen), at::Scalar(old_context)), at::Scalar(low)),
                                at::Scalar(high - low));
    at::Tensor smoothed = at::add(at::div(at::mul(at::rsub(smooth, 1), scaled), at::Scalar(factor)), at::mul(smooth, scaled));
    at::Tensor medium = at::mul(at::logical_not(at::lt(wavelen, at::Scalar(high_freq_wavelen))),
                                at::logical_not(at::gt(wavelen, at::Scalar(low_freq_wavelen))));
    return at::where(medium, smoothed, scaled);
}

}  // namespace

Rotary::Rotary(const LlamaConfig& config, bool scaling, const std::string& config_path)
    : dim_(config.head_dim), base_(config.rope_theta), max_positions_(config.max_position_embeddings) {
    const RopeScaling none;
    const RopeScaling& s = scaling && config.rope_scaling ? *config.rope_scaling : none;
    const std::string& type = s.rope_type;
    factor_ = s.factor;
    if (type == "default" || type == "dynamic") {
        // Dynamic NTK starts from the default frequencies: seq_len <= max_position_embeddings leaves the base alone.
        inv_freq_ = default_inv_freq(base_, dim_);
        dynamic_ = type == "dynamic";
    } else if (type == "linear") {
        inv_freq_ = default_inv_freq(base_, dim_).div_(at::Scalar(factor_));
    } else if (type == "yarn") {
        inv_freq_ = yarn_inv_freq(config, s, dim_, attention_scaling_);
    } else if (type == "longrope") {
        inv_freq_ = longrope_inv_freq(config, s, dim_, attention_scaling_);
    } else if (type == "llama3") {
        inv_freq_ = llama3_inv_freq(config, s, dim_);
    } else {
        throw Error(ErrorKind::Unsupported, config_path, "rope_scaling type '" + type + "' is not supported");
    }
}

at::Tensor Rotary::inv_freq_for_length(int64_t length) const {
    if (!dynamic_ || length <= max_positions_) return inv_freq_;
    // _compute_dynamic_ntk_parameters with seq_len = torch.max(position_ids) + 1, a 0-dim int64 tensor:
    // the new base is computed in float32 tensors, not in Python floats.
    at::Tensor seq_len = at::scalar_tensor(length, at::TensorOptions().dtype(at::kLong));
    at::Tensor ratio = at::div(at::mul(seq_len, at::Scalar(factor_)), at::Scalar(max_positions_));
    at::Tensor scaled = at::pow(at::sub(ratio, at::Scalar(factor_ - 1)),
                                at::Scalar(static_cast<double>(dim_) / static_cast<double>(dim_ - 2)));
    at::Tensor base = at::mul(scaled, at::Scalar(base_));
    return one_over(at::pow(base, exponents(dim_)));
}

RotaryTables Rotary::tables(const std::vector<int64_t>& past, int64_t T, const std::vector<int64_t>& lengths,
                            at::TensorOptions options) const {
    const int64_t B = static_cast<int64_t>(past.size());
    const at::Device device = options.device();
    at::Tensor positions = query_positions(past, T, device).to(at::kFloat);  // [B, T]
    at::Tensor inv;                                                          // [B or 1, D / 2]
    bool scaled_rows = false;
    if (dynamic_)
        for (int64_t n : lengths) scaled_rows = scaled_rows || n > max_positions_;
    if (!scaled_rows) {
        inv = inv_freq_.to(device).unsqueeze(0);
    } else {
        std::vector<at::Tensor> rows;
        for (int64_t b = 0; b < B; ++b) rows.push_back(inv_freq_for_length(lengths[static_cast<size_t>(b)]));
        inv = at::stack(rows).to(device);
    }
    // inv_freq @ position_ids with an inner dimension of 1: the same products (checked bit for bit).
    at::Tensor freqs = positions.unsqueeze(2) * inv.unsqueeze(1);  // [B, T, D / 2]
    at::Tensor emb = at::cat({freqs, freqs}, -1);
    at::Tensor cos = at::mul(emb.cos(), at::Scalar(attention_scaling_));
    at::Tensor sin = at::mul(emb.sin(), at::Scalar(attention_scaling_));
    const auto dtype = options.dtype().toScalarType();
    return {cos.to(dtype).unsqueeze(1), sin.to(dtype).unsqueeze(1)};
}

at::Tensor RotaryTables::apply(const at::Tensor& x) const {
    const int64_t half = x.size(-1) / 2;
    at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

}  // namespace lorascope::models
