"""Oracle step `oracle_generate`: Hugging Face's own `generate()` with the options the engine claims
to match, on the tiny checkpoints of `oracle_models` and `oracle_lora`, for the engine-level tests
in tests/engine/test_engine_hf_generate.cpp.

Everything here is what transformers 4.4x's generate() returns; nothing is derived by hand except
`expected_text` of the stop-string cases (HF's decoded text cut before the stop string, the engine's
documented contract: the stop sequence is excluded from the text, its tokens are not).

Layout under --out/generate:
  records.json           sampling, logprobs, generation-config defaults, beams with LoRA,
                         num_return_sequences and stop-string cases (see the keys)
  gc_<variant>/model/    a copy of models/<variant>/model whose generation_config.json sets beams,
                         length penalty, no-repeat n-gram, min length (and forced BOS)
  stops/model/           a tiny BART with its own byte-level BPE tokenizer (trained here) whose
                         final_logits_bias restricts the output to a few letters, a space and the
                         bytes of "é"/"è", so that text spans tokens and characters span tokens
"""
import json
import os
import shutil

import hf_compat  # noqa: F401  (before generate())
import torch
from peft import PeftModel
from tokenizers import ByteLevelBPETokenizer
from transformers import (AutoModelForCausalLM, AutoModelForSeq2SeqLM, BartConfig,
                          BartForConditionalGeneration, BartTokenizer)
from transformers.generation.stopping_criteria import StopStringCriteria

from llama_variants import CAUSAL_FAMILIES, reset_rotary
from models_oracle import randomize

NEW = 16
SAMPLING_VARIANTS = ["t5_v1_1", "bart_plain", "bloom_4h", "llama_gqa", "mistral_window", "qwen2_window_dynamic"]
# Each setting is a request's params as the engine takes them ("seed" is ours: torch.manual_seed).
SAMPLING = [
    {"do_sample": True, "top_k": 10, "seed": 11},
    {"do_sample": True, "top_k": 0, "top_p": 0.8, "seed": 12},
    {"do_sample": True, "top_k": 0, "typical_p": 0.7, "seed": 13},
    {"do_sample": True, "top_k": 0, "min_p": 0.15, "seed": 14},
    {"do_sample": True, "top_k": 0, "temperature": 0.6, "seed": 15},
    {"do_sample": True, "top_k": 30, "temperature": 1.4, "repetition_penalty": 1.5, "seed": 16},
    {"do_sample": True, "top_k": 40, "top_p": 0.9, "typical_p": 0.95, "min_p": 0.02, "temperature": 0.9,
     "repetition_penalty": 1.2, "seed": 17},
]
NUM_RETURN = [
    {"num_beams": 4, "num_return_sequences": 3, "length_penalty": 1.0, "max_new_tokens": 12},
    {"num_beams": 3, "num_return_sequences": 3, "length_penalty": 2.0, "early_stopping": True,
     "no_repeat_ngram_size": 2, "max_new_tokens": 10},
    {"do_sample": True, "num_return_sequences": 3, "top_k": 20, "seed": 5, "max_new_tokens": 12},
    {"do_sample": True, "num_return_sequences": 2, "top_p": 0.9, "top_k": 0, "temperature": 1.2, "seed": 6,
     "max_new_tokens": 12},
]
LORA_BEAMS = {"num_beams": 3, "length_penalty": 1.5, "no_repeat_ngram_size": 2, "early_stopping": True,
              "max_new_tokens": 10}
# generation_config.json of the gc_* copies: generate() with no arguments uses all of it.
GC_DEFAULTS = {
    "bart_plain": {"num_beams": 3, "length_penalty": 0.6, "no_repeat_ngram_size": 2, "min_length": 6,
                   "max_length": 14, "early_stopping": True, "forced_bos_token_id": 0,
                   "forced_eos_token_id": 2, "decoder_start_token_id": 2, "eos_token_id": 2,
                   "bos_token_id": 0, "pad_token_id": 1},
    "t5_v1_0": {"num_beams": 2, "length_penalty": 1.8, "no_repeat_ngram_size": 3, "min_length": 8,
                "max_new_tokens": 12, "decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0},
    "bloom_4h": {"num_beams": 3, "length_penalty": 0.5, "no_repeat_ngram_size": 2, "min_new_tokens": 5,
                 "max_new_tokens": 10, "forced_bos_token_id": 7, "bos_token_id": 1, "eos_token_id": 2,
                 "pad_token_id": 3},
}
NOT_HF = {"seed"}


def hf_kwargs(params):
    return {k: v for k, v in params.items() if k not in NOT_HF}


def load(mdir, family, adapter_dir=None):
    cls = AutoModelForCausalLM if family in CAUSAL_FAMILIES else AutoModelForSeq2SeqLM
    model = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    if adapter_dir:
        model = PeftModel.from_pretrained(model, adapter_dir).eval()
    return model


def new_tokens(row, family, prompt_len, eos, pad):
    """Generated ids of one output row: HF pads rows that ended early (eos) with pad."""
    gen = row[prompt_len:] if family in CAUSAL_FAMILIES else row[1:]
    out = []
    for t in gen:
        out.append(int(t))
        if int(t) == eos:
            break
    return out


def run(model, family, prompt, params, eos, pad, scores=False, **extra):
    ids = torch.tensor([prompt])
    reset_rotary(model)
    if "seed" in params:
        torch.manual_seed(params["seed"])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), output_scores=scores,
                             return_dict_in_generate=True, **hf_kwargs(params), **extra)
    rows = [new_tokens(r.tolist(), family, len(prompt), eos, pad) for r in out.sequences]
    logprobs = None
    if scores and params.get("num_beams", 1) == 1:
        # HF's scores are the processed (and warped) scores the token was chosen from.
        logprobs = [[float(torch.log_softmax(out.scores[t][r].float(), -1)[tok]) for t, tok in enumerate(row)]
                    for r, row in enumerate(rows)]
    seq_scores = out.sequences_scores.tolist() if getattr(out, "sequences_scores", None) is not None else None
    return rows, logprobs, seq_scores


def variant_records(root, name):
    with open(os.path.join(root, "models", name, "records.json")) as f:
        rec = json.load(f)
    return rec, os.path.join(root, "models", name, rec["model_dir"])


def sampling_and_logprobs(root):
    out = []
    for name in SAMPLING_VARIANTS:
        rec, mdir = variant_records(root, name)
        family, eos, pad = rec["family"], rec["eos_token_id"], rec["pad_token_id"]
        model = load(mdir, family)
        for k, prompt in enumerate(rec["prompts"][:3]):
            for params in [{}] + SAMPLING:   # {}: greedy, for its logprobs and for "sampling differs"
                p = dict(params, max_new_tokens=NEW, logprobs=True)
                rows, logprobs, _ = run(model, family, prompt, hf_kwargs_keep_seed(p), eos, pad, scores=True)
                out.append({"variant": name, "prompt_index": k, "params": p, "tokens": rows[0],
                            "logprobs": logprobs[0]})
    return out


def hf_kwargs_keep_seed(p):
    return {k: v for k, v in p.items() if k != "logprobs"}


def num_return_sequences(root):
    out = []
    for name in ["t5_v1_0", "bart_plain", "bloom_6h_postln", "llama_dynamic"]:
        rec, mdir = variant_records(root, name)
        family, eos, pad = rec["family"], rec["eos_token_id"], rec["pad_token_id"]
        model = load(mdir, family)
        for k, prompt in enumerate(rec["prompts"][:3]):
            for params in NUM_RETURN:
                rows, _, seq_scores = run(model, family, prompt, params, eos, pad, scores=True)
                out.append({"variant": name, "prompt_index": k, "params": params, "sequences": rows,
                            "sequence_scores": seq_scores})
    return out


def lora_beams(root):
    out = []
    for base in ["t5", "bart", "bloom", "llama", "qwen2"]:
        bdir = os.path.join(root, "lora", base)
        with open(os.path.join(bdir, "records.json")) as f:
            rec = json.load(f)
        family, eos, pad = rec["family"], rec["eos_token_id"], rec["pad_token_id"]
        for adapter in ["all", "patterns"]:
            model = load(os.path.join(bdir, rec["model_dir"]), family, os.path.join(bdir, "adapters", adapter))
            for k, prompt in enumerate(rec["prompts"]):
                rows, _, _ = run(model, family, prompt, LORA_BEAMS, eos, pad)
                out.append({"base": base, "adapter": adapter, "prompt_index": k, "params": LORA_BEAMS,
                            "tokens": rows[0]})
    return out


def generation_config_defaults(root, out_dir):
    out = []
    for name, gc in GC_DEFAULTS.items():
        rec, mdir = variant_records(root, name)
        family, eos, pad = rec["family"], rec["eos_token_id"], rec["pad_token_id"]
        dst = os.path.join(out_dir, "gc_" + name, "model")
        if os.path.isdir(os.path.dirname(dst)):
            shutil.rmtree(os.path.dirname(dst))
        shutil.copytree(mdir, dst)
        with open(os.path.join(dst, "generation_config.json"), "w") as f:
            json.dump(dict(gc, transformers_version=hf_compat.transformers.__version__), f, indent=2)
        model = load(dst, family)
        outputs = []
        for prompt in rec["prompts"]:
            rows, _, _ = run(model, family, prompt, {}, eos, pad)
            outputs.append(rows[0])
        out.append({"variant": name, "model_dir": os.path.relpath(dst, out_dir), "generation_config": gc,
                    "prompts": rec["prompts"], "outputs": outputs})
    return out


STOP_TEXT = ("a café, a crêpe; élan and élève. Ünïcode: naïve façade, déjà vu, über straße. "
             "bed bead cab dab deed babe. ") * 6


def build_stop_model(out_dir):
    mdir = os.path.join(out_dir, "stops", "model")
    if os.path.isdir(os.path.dirname(mdir)):
        shutil.rmtree(os.path.dirname(mdir))
    os.makedirs(mdir)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([STOP_TEXT], vocab_size=300, min_frequency=2, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(mdir)
    tok = BartTokenizer(os.path.join(mdir, "vocab.json"), os.path.join(mdir, "merges.txt"))
    tok.save_pretrained(mdir)
    vocab = tok.get_vocab()
    # Byte-level symbols: "Ġ" is the space, "Ã" 0xC3 (lead byte of é and è), "©" 0xA9, "¨" 0xA8;
    # "Ã©" is é as one token.
    allowed = ["a", "b", "c", "d", "e", "Ġ", "Ã", "©", "¨", "ab", "Ġb", "ed", "Ã©"]
    allowed_ids = [vocab[t] for t in allowed if t in vocab]
    config = BartConfig(vocab_size=len(vocab), d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=48, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                        activation_dropout=0.0, scale_embedding=False, forced_eos_token_id=None,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    torch.manual_seed(7070)
    model = BartForConditionalGeneration(config).eval()
    randomize(model, 7070)
    with torch.no_grad():
        bias = torch.full_like(model.final_logits_bias, -1e4)
        bias[0, allowed_ids] = 0.0
        bias[0, 2] = -4.0   # eos possible, so some outputs end before the limit
        # The lead byte 0xC3 and the continuations 0xA9/0xA8 often, so that é and è are often split
        # across two tokens (and sometimes a lone byte decodes to U+FFFD).
        bias[0, vocab["Ã"]] = 8.0
        bias[0, vocab["©"]] = 6.0
        bias[0, vocab["¨"]] = 6.0
        model.final_logits_bias.copy_(bias)
    model.save_pretrained(mdir, safe_serialization=True)
    return mdir, tok


# A random model this small repeats one token; banning repeated bigrams gives varied text.
STOP_PARAMS = {"max_new_tokens": 24, "no_repeat_ngram_size": 2}


def stop_cases(out_dir):
    mdir, tok = build_stop_model(out_dir)
    model = BartForConditionalGeneration.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(4242)
    cases = []
    for k in range(24):
        n = 3 + k % 5
        prompt = [0] + torch.randint(5, len(tok), (n,), generator=g).tolist() + [2]
        with torch.no_grad():
            base = model.generate(torch.tensor([prompt]), do_sample=False, **STOP_PARAMS)[0].tolist()[1:]
        pieces = [tok.convert_tokens_to_string([tok.convert_ids_to_tokens(t)]) for t in base]
        raw = [bytes(tok.byte_decoder[c] for c in tok.convert_ids_to_tokens(t)) if t > 4 else b"" for t in base]
        stops = []
        # A stop whose text spans a token boundary: the end of one token and the start of the next.
        for j in range(1, len(raw) - 1):
            a, b = raw[j], raw[j + 1]
            if a and b and a[-1:].isascii() and b[:1].isascii() and (a + b).isascii():
                stops.append(("spans_tokens", [(a[-1:] + b[:1]).decode()]))
                break
        # A stop that is one multi-byte character whose bytes arrive as two tokens (0xC3, then 0xA9/0xA8).
        for j in range(len(raw) - 1):
            if raw[j] == b"\xc3" and raw[j + 1] in (b"\xa9", b"\xa8"):
                stops.append(("inside_utf8_char", [(raw[j] + raw[j + 1]).decode()]))
                # ...and one that starts with ASCII and ends inside that character.
                if j > 0 and raw[j - 1][-1:].isascii() and raw[j - 1]:
                    stops.append(("ascii_then_utf8_char", [(raw[j - 1][-1:] + raw[j] + raw[j + 1]).decode()]))
                break
        # Two stops, the later-completing one listed first; and a stop that never completes (held
        # back, then released).
        text = tok.decode(base, skip_special_tokens=True)
        if len(text) > 8:
            stops.append(("two_stops", [text[6:8], text[2:4]]))
        stops.append(("never_completes", [text[:2] + "q" if len(text) >= 2 else "q"]))
        for kind, stop in stops:
            with torch.no_grad():
                out = model.generate(torch.tensor([prompt]), do_sample=False, stop_strings=stop, tokenizer=tok,
                                     **STOP_PARAMS)[0].tolist()[1:]
            ids = new_tokens([2] + out, "bart", 0, 2, 1)
            hf_text = tok.decode(ids, skip_special_tokens=True)
            # Whether HF's own criterion holds at the last token (a stop may complete on the very
            # token that also reaches the length limit).
            stopped = bool(StopStringCriteria(tok, stop)(torch.tensor([[2] + ids]), None)[0])
            cut = min([hf_text.find(s) for s in stop if s in hf_text], default=-1)
            cases.append({"kind": kind, "prompt": prompt, "stop": stop, "hf_ids": ids, "hf_text": hf_text,
                          "hf_stopped": stopped, "baseline_ids": base,
                          "expected_text": hf_text[:cut] if stopped and cut >= 0 else hf_text,
                          "token_pieces": pieces[:len(ids)]})
    return {"model_dir": os.path.relpath(mdir, out_dir), "params": STOP_PARAMS, "cases": cases}


def main():
    args = hf_compat.quiet_oracle_args()
    out_dir = os.path.join(args.out, "generate")
    os.makedirs(out_dir, exist_ok=True)
    records = {"versions": hf_compat.versions(),
               "sampling": sampling_and_logprobs(args.out),
               "num_return_sequences": num_return_sequences(args.out),
               "lora_beams": lora_beams(args.out),
               "generation_config_defaults": generation_config_defaults(args.out, out_dir),
               "stops": stop_cases(out_dir)}
    with open(os.path.join(out_dir, "records.json"), "w") as f:
        json.dump(records, f)
    kinds = {}
    for c in records["stops"]["cases"]:
        kinds.setdefault(c["kind"], [0, 0])
        kinds[c["kind"]][0] += 1
        kinds[c["kind"]][1] += int(c["hf_stopped"])
    print(f"generate oracle: {len(records['sampling'])} sampling/logprob runs, "
          f"{len(records['num_return_sequences'])} num_return_sequences runs, {len(records['lora_beams'])} LoRA "
          f"beam runs, {len(records['generation_config_defaults'])} generation configs, stop cases "
          f"(kind: cases, HF stopped) {kinds} -> {out_dir}")


if __name__ == "__main__":
    main()
