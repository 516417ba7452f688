"""Oracle step `oracle_decoder_prefix`: Hugging Face + PEFT's generate with tokens forced at the start
of an encoder-decoder's decoder, generate(..., decoder_input_ids=[start] + prefix), on oracle_lora's
tiny T5 and BART, with and without adapters: what the engine's Request::decoder_prefix_ids (a fork
of an encoder-decoder request, issue 32) must give.

Each prefix is what the window's fork forces: a greedy output's first j tokens, then the token
ranked second at position j. Per case: the prefix, and the new tokens after it with their
log-probabilities and top-3 alternatives (log_softmax of the processed scores each was chosen from),
greedy, with processors that read the prefix (repetition penalty, no-repeat n-grams, min_new_tokens),
and seeded sampling.

Layout under --out/decoder_prefix: records.json {"versions", "cases": [...]}.
"""
import json
import os
import shutil

import hf_compat  # noqa: F401  (before generate())
import torch

from generate_oracle import new_tokens
from inspect_oracle import NOT_HF, alternatives_of, load, lora_base

BASES = ["t5", "bart"]
ADAPTERS = ["", "all", "patterns"]
SETTINGS = [
    {"max_new_tokens": 8, "top_alternatives": 3, "logprobs": True},
    {"max_new_tokens": 8, "top_alternatives": 3, "logprobs": True, "repetition_penalty": 1.4,
     "no_repeat_ngram_size": 2, "min_new_tokens": 3},
    {"max_new_tokens": 8, "do_sample": True, "top_k": 8, "temperature": 1.0, "seed": 41, "top_alternatives": 3,
     "logprobs": True},
]


def fork_prefix(model, family, prompt, eos, j):
    """The greedy output's first j tokens, then the second most likely token at j (not eos)."""
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=j + 1,
                             output_scores=True, return_dict_in_generate=True)
    tokens = new_tokens(out.sequences[0].tolist(), family, len(prompt), eos, None)
    j = min(j, len(out.scores) - 1)
    ranked = torch.topk(torch.log_softmax(out.scores[j][0].float(), -1), 3).indices.tolist()
    choice = next(t for t in ranked[1:] if t != eos)
    return tokens[:j] + [int(choice)]


def run(model, prompt, prefix, start, params, eos):
    ids = torch.tensor([prompt])
    if "seed" in params:
        torch.manual_seed(params["seed"])
    hf = {k: v for k, v in params.items() if k not in NOT_HF}
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             decoder_input_ids=torch.tensor([[start] + prefix]), output_scores=True,
                             return_dict_in_generate=True, **hf)
    seq = out.sequences[0].tolist()
    assert seq[:1 + len(prefix)] == [start] + prefix, "generate did not keep the decoder prefix"
    tokens = []
    for t in seq[1 + len(prefix):]:
        tokens.append(int(t))
        if int(t) == eos:
            break
    k = params.get("top_alternatives", 0)
    return {"tokens": tokens,
            "logprobs": [float(torch.log_softmax(out.scores[t][0].float(), -1)[tok]) for t, tok in enumerate(tokens)],
            "alternatives": [alternatives_of(out.scores[t][0], k) for t in range(len(tokens))]}


def main():
    args = hf_compat.quiet_oracle_args()
    out_dir = os.path.join(args.out, "decoder_prefix")
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    cases = []
    for base in BASES:
        bdir, rec = lora_base(args.out, base)
        for adapter in ADAPTERS:
            model = load(bdir, rec, adapter)
            start = model.config.decoder_start_token_id
            for i, prompt in enumerate(rec["prompts"]):
                prefix = fork_prefix(model, rec["family"], prompt, rec["eos_token_id"], i % 3)
                for params in SETTINGS:
                    row = run(model, prompt, prefix, start, params, rec["eos_token_id"])
                    cases.append({"base": base, "adapter": adapter, "prompt_index": i, "params": params,
                                  "decoder_prefix_ids": prefix, **row})
    with open(os.path.join(out_dir, "records.json"), "w") as f:
        json.dump({"versions": hf_compat.versions(), "cases": cases}, f)
    print(f"decoder prefix oracle: {len(cases)} cases -> {out_dir}")


if __name__ == "__main__":
    main()
