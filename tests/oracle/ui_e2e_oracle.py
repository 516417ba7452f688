"""Tiny self-contained T5 + two PEFT LoRA adapters for the end-to-end GUI tests (tests/ui_e2e).

The model carries its own small SentencePiece tokenizer trained here (nothing from ../shared), so
text prompts work on any machine. The adapters are made by PEFT itself with non-zero lora_B and
differ in rank and target set. HF + PEFT greedy outputs for the test prompts are recorded too.

The same manifest for the demo pack's Llama (resources/demo/llama, trained by scripts/train-demo: a
decoder-only model with grouped-query attention and a SentencePiece BPE tokenizer) and two of its
adapters, read in place, so that the window's end-to-end test runs on a causal model too.

Writes under --out:
  ui_e2e/model/            config.json, model.safetensors, generation_config.json, spiece.model, ...
  ui_e2e/adapters/<name>/  adapter_config.json, adapter_model.safetensors
  ui_e2e/manifest.json     paths, adapter specs, prompts, HF greedy token ids, versions
  ui_e2e/llama/manifest.json  the same for the demo pack's Llama (paths into resources/demo)
"""
import argparse
import io
import json
import os
import shutil

import hf_compat  # noqa: F401  (first: offline env, torch.distributed shim)

import sentencepiece as spm
import torch
from lora_init import randomize_lora
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoTokenizer, LlamaForCausalLM, T5Config, T5ForConditionalGeneration, T5Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO_LLAMA = os.path.join(HERE, "..", "..", "resources", "demo", "llama")

SEED = 2024
MAX_NEW_TOKENS = 8
TEXT = """The quick brown fox jumps over the lazy dog.
Lorascope batches many prompts and decodes them together.
Adapters change what a model says; the base model stays the same.
One two three four five six seven eight nine ten.
Translate English to German: the house is wonderful.
Summarize: continuous batching admits new requests at every step.
"""
ADAPTERS = [
    ("style-a", dict(r=4, lora_alpha=8, target_modules=["q", "v"]), 11),
    ("style-b", dict(r=8, lora_alpha=16, target_modules=["q", "k", "v", "o", "wi", "wo"]), 12),
]
PROMPTS = [
    ("p1", "The quick brown fox jumps over the lazy dog.", ""),
    ("p2", "Translate English to German: the house is wonderful.", "style-a"),
    ("p3", "Summarize: continuous batching admits new requests.", "style-b"),
    ("p4", "One two three four five.", "style-a"),
    ("p5", "Adapters change what a model says.", ""),
]
# The Llama demo: two adapters of different rank, prompts of its digit task (p3 laid out as a user turn
# of its chat template), enough new tokens for the answers and their end of sequence.
LLAMA_MAX_NEW_TOKENS = 12
LLAMA_ADAPTERS = ["reverse", "shout"]
LLAMA_PROMPTS = [
    ("p1", "3 1 4 1 =", ""),
    ("p2", "2 7 1 8 =", "reverse"),
    ("p3", "[INST] 1 6 1 8 = [/INST]", "shout"),
    ("p4", "9 0 5 3 =", "reverse"),
    ("p5", "6 6 2 0 =", ""),
]


def greedy(model, tok, prompt):
    ids = tok(prompt, return_tensors="pt").input_ids
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW_TOKENS,
                         do_sample=False, num_beams=1)[0].tolist()
    return ids[0].tolist(), out[1:]


def llama_demo_manifest(root):
    """HF + PEFT greedy ids of the demo's Llama for LLAMA_PROMPTS (text prompts: the tokenizer adds BOS)."""
    mdir = os.path.abspath(DEMO_LLAMA)
    tok = AutoTokenizer.from_pretrained(mdir)
    manifest = {"model": mdir, "max_new_tokens": LLAMA_MAX_NEW_TOKENS, "adapters": {}, "prompts": [],
                "versions": hf_compat.versions()}
    for name in LLAMA_ADAPTERS:
        adir = os.path.join(mdir, "adapters", name)
        with open(os.path.join(adir, "adapter_config.json")) as f:
            cfg = json.load(f)
        manifest["adapters"][name] = {"dir": adir, "r": cfg["r"], "targets": sorted(cfg["target_modules"])}
    for pid, prompt, adapter in LLAMA_PROMPTS:
        m = LlamaForCausalLM.from_pretrained(mdir, torch_dtype=torch.float32).eval()
        if adapter:
            m = PeftModel.from_pretrained(m, manifest["adapters"][adapter]["dir"]).eval()
        ids = tok(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            out = m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=LLAMA_MAX_NEW_TOKENS,
                             do_sample=False, num_beams=1, pad_token_id=tok.pad_token_id)[0].tolist()
        gen = out[ids.shape[1]:]
        manifest["prompts"].append({"id": pid, "prompt": prompt, "adapter": adapter, "input_ids": ids[0].tolist(),
                                    "hf_greedy_ids": gen, "hf_text": tok.decode(gen, skip_special_tokens=True)})
    os.makedirs(os.path.join(root, "llama"))
    with open(os.path.join(root, "llama", "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    root = os.path.abspath(os.path.join(args.out, "ui_e2e"))
    if os.path.isdir(root):
        shutil.rmtree(root)
    mdir = os.path.join(root, "model")
    os.makedirs(mdir)

    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT.splitlines() * 20), model_writer=proto,
        vocab_size=96, model_type="unigram", hard_vocab_limit=False, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        character_coverage=1.0, num_threads=1, seed_sentencepiece_size=10000, minloglevel=2)
    with open(os.path.join(mdir, "spiece.model"), "wb") as f:
        f.write(proto.getvalue())
    tok = T5Tokenizer(os.path.join(mdir, "spiece.model"), extra_ids=4, legacy=False)
    tok.save_pretrained(mdir)

    torch.manual_seed(SEED)
    config = T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                      feed_forward_proj="relu", tie_word_embeddings=False, dropout_rate=0.0,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config).eval()
    model.save_pretrained(mdir, safe_serialization=True)

    manifest = {"model": mdir, "max_new_tokens": MAX_NEW_TOKENS, "adapters": {}, "prompts": [],
                "versions": hf_compat.versions(), "seed": SEED}
    for name, kwargs, seed in ADAPTERS:
        adir = os.path.join(root, "adapters", name)
        base = T5ForConditionalGeneration.from_pretrained(mdir, torch_dtype=torch.float32).eval()
        peft_model = get_peft_model(base, LoraConfig(task_type="SEQ_2_SEQ_LM", lora_dropout=0.0,
                                                     init_lora_weights=False, **kwargs))
        randomize_lora(peft_model, seed, b_scale=0.5)
        peft_model.save_pretrained(adir, safe_serialization=True)
        manifest["adapters"][name] = {"dir": adir, "r": kwargs["r"], "targets": sorted(kwargs["target_modules"])}

    base = T5ForConditionalGeneration.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    for pid, prompt, adapter in PROMPTS:
        if adapter:
            m = PeftModel.from_pretrained(T5ForConditionalGeneration.from_pretrained(mdir, torch_dtype=torch.float32),
                                          manifest["adapters"][adapter]["dir"]).eval()
        else:
            m = base
        with torch.no_grad():
            input_ids, output_ids = greedy(m, tok, prompt)
        manifest["prompts"].append({"id": pid, "prompt": prompt, "adapter": adapter, "input_ids": input_ids,
                                    "hf_greedy_ids": output_ids,
                                    "hf_text": tok.decode(output_ids, skip_special_tokens=True)})
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    if os.path.isdir(DEMO_LLAMA):
        llama_demo_manifest(root)
    else:
        print(f"{DEMO_LLAMA} missing (scripts/train-demo --models llama): no Llama manifest")
    print(root)


if __name__ == "__main__":
    main()
