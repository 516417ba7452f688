#include "io/seq2seq_types.h"

namespace lorascope::io {

bool is_t5_model_type(const std::string& model_type) { return model_type == "t5" || model_type == "mt5"; }

bool is_bart_model_type(const std::string& model_type) {
    return model_type == "bart" || model_type == "marian" || model_type == "mbart" || model_type == "m2m_100" ||
           model_type == "pegasus";
}

T5Config t5_defaults(const std::string& model_type) {
    T5Config c;
    if (model_type == "mt5") {  // MT5Config: t5-v1.1 shapes, untied head, 250k SentencePiece ids
        c.vocab_size = 250112;
        c.d_ff = 1024;
        c.num_layers = c.num_decoder_layers = 8;
        c.num_heads = 6;
        c.feed_forward_proj = "gated-gelu";
        c.tie_word_embeddings = false;
    }
    return c;
}

namespace {

// What Marian and Pegasus share: no bos, the decoder starting from the pad, eos forced at the
// length limit, sinusoidal positions and no LayerNorm after the embeddings.
void pad_started_sinusoidal(BartConfig& c, int64_t pad, int64_t eos) {
    c.pad_token_id = pad;
    c.bos_token_id.reset();
    c.eos_token_id = eos;
    c.decoder_start_token_id = pad;
    c.forced_eos_token_id = eos;
    c.position_embedding = PositionEmbedding::Sinusoidal;
    c.layernorm_embedding = false;
}

}  // namespace

BartConfig bart_defaults(const std::string& model_type) {
    BartConfig c;  // BartConfig's own defaults
    if (model_type == "marian") {
        c.vocab_size = 58101;
        pad_started_sinusoidal(c, 58100, 0);
    } else if (model_type == "mbart") {
        c.decoder_start_token_id.reset();
        c.pre_layer_norm = c.final_layer_norms = true;
    } else if (model_type == "m2m_100") {
        c.vocab_size = 128112;
        c.activation_function = "relu";
        c.scale_embedding = true;
        c.forced_eos_token_id.reset();
        c.position_embedding = PositionEmbedding::SinusoidalFromPad;
        c.pre_layer_norm = c.final_layer_norms = true;
        c.layernorm_embedding = false;
        c.final_logits_bias = false;
    } else if (model_type == "pegasus") {
        pad_started_sinusoidal(c, 0, 1);
        c.pre_layer_norm = c.final_layer_norms = true;
    }
    c.decoder_vocab_size = c.vocab_size;
    return c;
}

}  // namespace lorascope::io
