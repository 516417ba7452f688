"""Oracle step `oracle_beams`: Hugging Face's beam search (and seeded sampling) on the tiny models
that `oracle_models` built, for the engine's parity tests.

Writes models/<variant>/beams.json next to records.json:
  {"versions", "settings": [{"params", "outputs": [generated ids per prompt]}]}
"""
import argparse
import json
import os

import hf_compat  # noqa: F401  (before generate())
import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

from llama_variants import CAUSAL_FAMILIES, reset_rotary

SETTINGS = [
    # The setting: 4 beams, length penalty 2.0, no repeated 3-grams, early stopping.
    {"num_beams": 4, "length_penalty": 2.0, "no_repeat_ngram_size": 3, "early_stopping": True,
     "max_new_tokens": 24},
    {"num_beams": 3, "length_penalty": 1.0, "early_stopping": False, "max_new_tokens": 12},
    {"num_beams": 2, "length_penalty": -0.5, "early_stopping": "never", "repetition_penalty": 1.3,
     "max_new_tokens": 10},
]


def generated(out, family, prompt):
    ids = out[0].tolist()
    gen = ids[1:] if family not in CAUSAL_FAMILIES else ids[len(prompt):]
    return gen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = os.path.join(args.out, "models")
    for variant in sorted(os.listdir(root)):
        rec_path = os.path.join(root, variant, "records.json")
        if not os.path.isfile(rec_path):
            continue
        with open(rec_path) as f:
            records = json.load(f)
        if "prompts" not in records:
            continue
        family = records["family"]
        mdir = os.path.join(root, variant, records["model_dir"])
        cls = AutoModelForCausalLM if family in CAUSAL_FAMILIES else AutoModelForSeq2SeqLM
        model = cls.from_pretrained(mdir, torch_dtype=torch.float32).eval()
        eos = records["eos_token_id"]
        settings = []
        for params in SETTINGS:
            outputs = []
            for prompt in records["prompts"]:
                ids = torch.tensor([prompt])
                reset_rotary(model)
                with torch.no_grad():
                    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, **params)
                gen = generated(out, family, prompt)
                # HF pads finished beams' outputs with pad; keep up to and including eos.
                if eos in gen:
                    gen = gen[:gen.index(eos) + 1]
                outputs.append(gen)
            settings.append({"params": params, "outputs": outputs})
        with open(os.path.join(root, variant, "beams.json"), "w") as f:
            json.dump({"versions": hf_compat.versions(), "variant": variant, "settings": settings}, f)
        print(f"  {variant}: {len(settings)} beam settings x {len(records['prompts'])} prompts")


if __name__ == "__main__":
    main()
