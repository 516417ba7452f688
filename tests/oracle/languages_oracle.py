"""Oracle step `oracle_languages`: requests that name their languages (issue 30), as Hugging Face
runs them. Tiny random mBART-50 and NLLB (M2M100) models are built around the tokenizers that
`oracle_seq2seq_tokenizers` trained (their vocabularies, language codes and special-token
layouts), and each case is tokenized with the tokenizer's src_lang set to the request's source
language and generated with generate(forced_bos_token_id=tokenizer.convert_tokens_to_ids(tgt_lang)),
the way the models' cards translate. Cases without a language use the tokenizer's saved src_lang and
force nothing. Every case is generated alone; the engine runs them in one batch.

Scored targets (a request's text target with prompt_logprobs, `lorascope-cli score`): each pair is
encoded as HF encodes a seq2seq training pair, tok(prompt, text_target=target) with the case's
src_lang and tgt_lang set on the tokenizer (mBART-50 and NLLB put the tgt_lang code where their
target layout does; Marian encodes the target with its target SentencePiece model), and scored by
model(input_ids, labels=labels): the loss and each label's log-probability under teacher forcing.
A tiny Marian model around the oracle's Marian tokenizer (joint vocab.json) is scored as well.

Layout under --out/languages/<name>/ (mbart50, nllb, nllb_legacy, marian):
  model/          save_pretrained directory with the tokenizer files copied in
  records.json    {"cases": [{"prompt", "params", "input_ids", "tokens", "text"}] (none for marian),
                   "language_codes", "scores": [{"prompt", "target", "params", "input_ids", "labels",
                   "source_side_ids" (the target encoded as source text), "loss", "token_logprobs"}]}
"""
import argparse
import json
import os
import shutil

import hf_compat  # noqa: F401  (before generate())
import torch
from transformers import (AutoTokenizer, M2M100Config, M2M100ForConditionalGeneration, MarianConfig,
                          MarianMTModel, MBartConfig, MBartForConditionalGeneration)

from models_oracle import randomize

SHAPE = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=48, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
             max_position_embeddings=128, tie_word_embeddings=False)
# Untied heads and embeddings scaled down after randomize(): with a tied unit-variance table, pre-LN
# and a final norm, the residual stream is the input token's own embedding and greedy decoding
# repeats its last token (measured: NLLB repeated the forced code 12 times in every case).
EMBEDDING_SCALE = 0.1
PROMPTS = ["The weather is nice today and we walk to the river.",
           "Wie spät ist es?",
           "Hello world, this is a longer sentence so that the source code is read among many tokens."]
NEW = 12
TARGETS = ["Das Wetter ist heute schön und wir gehen zum Fluss.", "Quelle heure est-il ?",
           "Bună ziua, lume! Acesta este un text mai lung."]


def cases(sources, targets):
    """(prompt, params): each source and target language, mixed in one batch, beams once, and defaults."""
    out = []
    for i, (src, tgt) in enumerate(zip(sources, targets)):
        out.append((PROMPTS[i % len(PROMPTS)], {"src_lang": src, "tgt_lang": tgt, "max_new_tokens": NEW}))
    out.append((PROMPTS[0], {"tgt_lang": targets[1], "max_new_tokens": NEW}))    # the tokenizer's src_lang
    out.append((PROMPTS[1], {"src_lang": sources[2], "max_new_tokens": NEW}))    # nothing forced
    out.append((PROMPTS[2], {"src_lang": sources[1], "tgt_lang": targets[0], "num_beams": 3,
                             "max_new_tokens": NEW}))
    out.append((PROMPTS[0], {"max_new_tokens": NEW}))
    return out


def score_cases(sources, targets):
    """(prompt, target, params): each language pair, and the tokenizer's own languages."""
    out = [(PROMPTS[i % len(PROMPTS)], TARGETS[i % len(TARGETS)], {"src_lang": src, "tgt_lang": tgt})
           for i, (src, tgt) in enumerate(zip(sources, targets))]
    out.append((PROMPTS[1], TARGETS[0], {}))
    return out


def record_scores(tok, model, cases):
    """HF's encoding of each (prompt, text_target) pair and the labelled loss on it."""
    default_src, default_tgt = getattr(tok, "src_lang", None), getattr(tok, "tgt_lang", None)
    out = []
    for prompt, target, params in cases:
        if default_src is not None:
            tok.src_lang = params.get("src_lang", default_src)
            tok.tgt_lang = params.get("tgt_lang", default_tgt)
        enc = tok(prompt, text_target=target, return_tensors="pt")
        with torch.no_grad():
            res = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=enc["labels"])
        logprobs = torch.log_softmax(res.logits[0].float(), dim=-1)
        labels = enc["labels"][0].tolist()
        out.append({"prompt": prompt, "target": target, "params": params, "input_ids": enc["input_ids"][0].tolist(),
                    "labels": labels, "source_side_ids": tok(target)["input_ids"], "loss": float(res.loss),
                    "token_logprobs": [float(logprobs[j, t]) for j, t in enumerate(labels)]})
    if default_src is not None:
        tok.src_lang, tok.tgt_lang = default_src, default_tgt
    # Encoding the target as source text must differ somewhere, or the engine test could not fail.
    assert any(r["labels"] != r["source_side_ids"] for r in out), "every target encodes as its source text"
    return out


# name: (tokenizer directory under tokenizers/, model class, config, source languages, target languages)
MODELS = {
    "mbart50": ("mbart50_json", MBartForConditionalGeneration,
                lambda vocab: MBartConfig(vocab_size=vocab, decoder_start_token_id=2, scale_embedding=True,
                                          forced_eos_token_id=2, **SHAPE),
                ["en_XX", "de_DE", "zh_CN", "ro_RO"], ["ro_RO", "fr_XX", "de_DE", "en_XX"]),
    "nllb": ("nllb_json", M2M100ForConditionalGeneration,
             lambda vocab: M2M100Config(vocab_size=vocab, decoder_start_token_id=2, scale_embedding=True,
                                        encoder_layerdrop=0.0, decoder_layerdrop=0.0, **SHAPE),
             ["eng_Latn", "deu_Latn", "zho_Hans", "fra_Latn"], ["fra_Latn", "ron_Latn", "deu_Latn", "eng_Latn"]),
    # The legacy layout puts the source code last (X </s> [src_lang]).
    "nllb_legacy": ("nllb_legacy_json", M2M100ForConditionalGeneration,
                    lambda vocab: M2M100Config(vocab_size=vocab, decoder_start_token_id=2, scale_embedding=True,
                                               encoder_layerdrop=0.0, decoder_layerdrop=0.0, **SHAPE),
                    ["eng_Latn", "deu_Latn", "zho_Hans"], ["fra_Latn", "ron_Latn", "deu_Latn"]),
}


def build(out_root, name, seed):
    tok_name, cls, make_config, sources, targets = MODELS[name]
    tok_dir = os.path.join(out_root, "tokenizers", tok_name)
    root = os.path.join(out_root, "languages", name)
    mdir = os.path.join(root, "model")
    if os.path.isdir(root):
        shutil.rmtree(root)
    shutil.copytree(tok_dir, mdir)
    tok = AutoTokenizer.from_pretrained(mdir)
    default_src = tok.src_lang
    torch.manual_seed(seed)
    model = cls(make_config(len(tok))).eval()
    randomize(model, seed)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(EMBEDDING_SCALE)
    model.save_pretrained(mdir, safe_serialization=True)
    model = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    records = []
    for prompt, params in cases(sources, targets):
        tok.src_lang = params.get("src_lang", default_src)
        input_ids = tok(prompt, return_tensors="pt").input_ids
        kwargs = {"max_new_tokens": params["max_new_tokens"], "num_beams": params.get("num_beams", 1),
                  "do_sample": False}
        if "tgt_lang" in params:
            kwargs["forced_bos_token_id"] = tok.convert_tokens_to_ids(params["tgt_lang"])
        with torch.no_grad():
            seq = model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)[0].tolist()
        tokens = seq[1:]   # without the decoder start
        while tokens and tokens[-1] == model.config.pad_token_id:
            tokens.pop()
        records.append({"prompt": prompt, "params": params, "input_ids": input_ids[0].tolist(), "tokens": tokens,
                        "text": tok.decode(tokens, skip_special_tokens=True)})
    tok.src_lang = default_src
    scores = record_scores(tok, model, score_cases(sources, targets))
    with open(os.path.join(root, "records.json"), "w") as f:
        json.dump({"model_dir": "model", "cases": records,
                   "language_codes": list(tok.additional_special_tokens) if name != "mbart50"
                   else list(tok.lang_code_to_id), "scores": scores}, f, indent=1)


def build_marian(out_root, seed):
    """Marian has no language options: its scored targets show the target SentencePiece model."""
    root = os.path.join(out_root, "languages", "marian")
    mdir = os.path.join(root, "model")
    if os.path.isdir(root):
        shutil.rmtree(root)
    shutil.copytree(os.path.join(out_root, "tokenizers", "marian"), mdir)
    tok = AutoTokenizer.from_pretrained(mdir)
    shape = {k: v for k, v in SHAPE.items() if k != "tie_word_embeddings"}
    config = MarianConfig(vocab_size=len(tok), decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
                          eos_token_id=tok.eos_token_id, forced_eos_token_id=tok.eos_token_id, **shape)
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    randomize(model, seed)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(EMBEDDING_SCALE)
    model.save_pretrained(mdir, safe_serialization=True)
    model = MarianMTModel.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    cases = [(PROMPTS[i], TARGETS[i], {}) for i in range(len(PROMPTS))]
    with open(os.path.join(root, "records.json"), "w") as f:
        json.dump({"model_dir": "model", "cases": [], "language_codes": [], "scores": record_scores(tok, model, cases)},
                  f, indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = parser.parse_args().out
    for seed, name in enumerate(MODELS):
        build(out, name, 300 + seed)
    build_marian(out, 300 + len(MODELS))


if __name__ == "__main__":
    main()
