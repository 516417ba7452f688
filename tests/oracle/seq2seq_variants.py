"""The encoder-decoder model types beyond T5 and BART (issue 30), as tiny random models built with
Hugging Face's own classes: mT5 on the T5 path; Marian, mBART, Pegasus and M2M100 (NLLB) on BART's
skeleton. models_oracle.py builds variants() like its own; lora_oracle.py builds lora_bases().

Two configurations of each type at least, so that every switch of the C++ model is exercised both
ways where HF has one: sinusoidal positions computed (Marian, Pegasus without the table in the file)
and read from the file (Pegasus), fairseq positions counted from the pad id (M2M100, with a prompt
that runs past max_position_embeddings and one holding a pad id), learned positions (mBART); pre-LN
with final norms (mBART, Pegasus, M2M100; HF has no pre-LN class without them) and post-LN (Marian);
layernorm_embedding (mBART) or none; scale_embedding; tied and untied heads; Marian's separate
source and target vocabularies; final_logits_bias or none (M2M100); bad_words_ids and
renormalize_logits (Marian's generation config); forced BOS (a language code) and mBART's decoder
start falling back to bos.
"""
from transformers import (M2M100Config, M2M100ForConditionalGeneration, MarianConfig, MarianMTModel,
                          MBartConfig, MBartForConditionalGeneration, MT5Config, MT5ForConditionalGeneration,
                          PegasusConfig, PegasusForConditionalGeneration)

# Widths and depths shared by the BART-shaped variants: tiny, with ffn sizes that differ per stack.
BART_SHAPE = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=48, dropout=0.0,
                  attention_dropout=0.0, activation_dropout=0.0)
MT5_SHAPE = dict(vocab_size=320, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4, dropout_rate=0.0,
                 relative_attention_max_distance=20)

# models_oracle.variants() entries: (name, family, class, config, extra). `family` is the C++ Family
# (the T5 or the BART path); extra["generation"] is written into the generation config before saving.
MARIAN_PAD = 299


def variants():
    return [
        ("mt5_gated", "t5", MT5ForConditionalGeneration, MT5Config(**MT5_SHAPE), {}),
        ("mt5_tied", "t5", MT5ForConditionalGeneration,
         MT5Config(**dict(MT5_SHAPE, d_kv=12, num_decoder_layers=3, tie_word_embeddings=True,
                          relative_attention_num_buckets=16)), {}),
        # opus-mt's shape: swish, scaled embeddings, shared vocabulary, pad = decoder start = last id,
        # the pad banned and the logits renormalised as its generation configs say. 60-token prompts
        # read the sinusoidal table up to row 59 of 64. Its final_logits_bias favours the pad so
        # that the ban decides tokens: without it the raw argmax is often the pad.
        ("marian_shared", "bart", MarianMTModel,
         MarianConfig(vocab_size=300, pad_token_id=MARIAN_PAD, decoder_start_token_id=MARIAN_PAD, eos_token_id=0,
                      max_position_embeddings=64, activation_function="swish", scale_embedding=True, **BART_SHAPE),
         {"final_logits_bias": True, "bos": None, "boost_logit": (MARIAN_PAD, 100.0),
          "generation": {"bad_words_ids": [[MARIAN_PAD]], "renormalize_logits": True}}),
        # Separate vocabularies: two 300-row tables (HF copies the encoder's for the decoder) and an
        # untied 260-row head (a tied one would be the decoder table's 300 rows, which HF refuses).
        ("marian_separate", "bart", MarianMTModel,
         MarianConfig(vocab_size=300, decoder_vocab_size=260, share_encoder_decoder_embeddings=False,
                      tie_word_embeddings=False,
                      pad_token_id=259, decoder_start_token_id=259, eos_token_id=0, max_position_embeddings=96,
                      activation_function="gelu", **dict(BART_SHAPE, decoder_attention_heads=2)),
         {"final_logits_bias": True, "bos": None}),
        ("mbart_plain", "bart", MBartForConditionalGeneration,
         MBartConfig(vocab_size=300, decoder_start_token_id=2, max_position_embeddings=128, activation_function="gelu",
                     **BART_SHAPE),
         {"final_logits_bias": True}),
        # mBART-50's way of choosing the output language: a code forced as the first token; no
        # decoder_start_token_id, so generation starts from bos. Heads differ per stack.
        ("mbart_forced_lang", "bart", MBartForConditionalGeneration,
         MBartConfig(vocab_size=300, forced_bos_token_id=297, scale_embedding=True, activation_function="relu",
                     max_position_embeddings=128, **dict(BART_SHAPE, decoder_attention_heads=2)),
         {}),
        ("pegasus_table_in_file", "bart", PegasusForConditionalGeneration,
         PegasusConfig(vocab_size=300, max_position_embeddings=64, activation_function="relu", scale_embedding=True,
                       **BART_SHAPE),
         {"final_logits_bias": True, "bos": None, "perturb_positions": True}),
        ("pegasus_computed_table", "bart", PegasusForConditionalGeneration,
         PegasusConfig(vocab_size=300, max_position_embeddings=80, activation_function="gelu", tie_word_embeddings=False,
                       **BART_SHAPE),
         {"bos": None, "drop_tensors": ["model.encoder.embed_positions.weight",
                                         "model.decoder.embed_positions.weight"]}),
        # NLLB's shape and use: the target language's code forced first. max_position_embeddings 48
        # < the 60-token prompt, so HF grows the table.
        ("m2m100_grown_table", "bart", M2M100ForConditionalGeneration,
         M2M100Config(vocab_size=300, max_position_embeddings=48, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                      forced_bos_token_id=296, **BART_SHAPE),
         {"pad_in_prompt": True}),
        ("m2m100_untied", "bart", M2M100ForConditionalGeneration,
         M2M100Config(vocab_size=300, max_position_embeddings=128, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                      activation_function="gelu", scale_embedding=False, tie_word_embeddings=False,
                      **dict(BART_SHAPE, d_model=48, decoder_attention_heads=6)),
         {"pad_in_prompt": True}),
    ]


def shape_prompts(prompts, config, extra):
    """A pad id inside a prompt (M2M100's positions skip it): the third prompt's sixth token."""
    if extra.get("pad_in_prompt") and len(prompts) > 2 and len(prompts[2]) > 6:
        prompts[2][5] = config.pad_token_id
    return prompts


BART_TARGETS = ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2", "lm_head"]
BART_PATTERN = {"rank_pattern": {"fc2": 2, "decoder.layers.0.encoder_attn.v_proj": 9},
                "alpha_pattern": {"fc1": 5.0}, "targets": ["v_proj", "fc1", "fc2", "out_proj"]}
LORA_BART = dict(BART_SHAPE, max_position_embeddings=64)


def lora_bases():
    """lora_oracle.bases() entries: every linear of each type targeted ("all"), with the spec's
    small, rsLoRA and rank/alpha-pattern adapters. Raw argmax is compared step by step, so no
    end-of-length forcing. Pegasus and M2M100 have untied heads here: with pre-LN, a final norm and
    a tied unit-variance table, the residual stream is the input token's own embedding and every
    run (base and adapters alike) repeats the decoder start (measured: 1 distinct output of 5 runs,
    M2M100 stopping at its eos-valued start after one token)."""
    return [
        ("mt5", "t5", MT5ForConditionalGeneration,
         MT5Config(**dict(MT5_SHAPE, vocab_size=160)),
         ["q", "k", "v", "o", "wi_0", "wi_1", "wo", "lm_head"], ["q", "v"], ["wi_0", "wi_1", "wo", "k"],
         {"rank_pattern": {"wi_1": 5}, "alpha_pattern": {"encoder.block.0.layer.0.SelfAttention.v": 3.0},
          "targets": ["v", "wi_0", "wi_1"]}),
        ("marian", "bart", MarianMTModel,
         MarianConfig(vocab_size=150, pad_token_id=149, decoder_start_token_id=149, eos_token_id=0,
                      forced_eos_token_id=None, activation_function="swish", scale_embedding=True, **LORA_BART),
         BART_TARGETS, ["q_proj", "v_proj"], ["k_proj", "out_proj", "fc1"], BART_PATTERN),
        ("mbart", "bart", MBartForConditionalGeneration,
         MBartConfig(vocab_size=150, decoder_start_token_id=2, forced_eos_token_id=None, **LORA_BART),
         BART_TARGETS, ["q_proj", "v_proj"], ["k_proj", "out_proj", "fc1"], BART_PATTERN),
        ("pegasus", "bart", PegasusForConditionalGeneration,
         PegasusConfig(vocab_size=150, forced_eos_token_id=None, scale_embedding=True, tie_word_embeddings=False,
                       **LORA_BART),
         BART_TARGETS, ["q_proj", "v_proj"], ["fc1", "fc2", "v_proj"], BART_PATTERN),
        ("m2m100", "bart", M2M100ForConditionalGeneration,
         M2M100Config(vocab_size=150, encoder_layerdrop=0.0, decoder_layerdrop=0.0, tie_word_embeddings=False,
                      **LORA_BART),
         BART_TARGETS, ["q_proj", "v_proj"], ["q_proj", "out_proj", "fc2"], BART_PATTERN),
    ]
