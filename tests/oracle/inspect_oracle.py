"""Oracle step `oracle_inspect`: what Hugging Face + PEFT compute for the request features that let a
user see what the model weighed (issue 32), on the tiny checkpoints and adapters of `oracle_lora`
(T5, BART, BLOOM, and the Llama family: llama with grouped-query attention, mistral with a sliding
window shorter than prompt plus generation, qwen2 with multi-query attention and a tied head):

  alternatives     generate(output_scores=True): per generated token, torch.topk of log_softmax of
                   the processed scores (the distribution the token was chosen from), -inf entries
                   dropped; greedy and seeded sampling, with and without adapters
  prompt_logprobs  decoder-only: log_softmax of a forward pass over the prompt, each prompt token
                   given the ones before it (the first has none); encoder-decoder: each token of a
                   given target under teacher forcing (the loss path with labels)
  best_of          torch.manual_seed(s) + generate(do_sample=True, num_return_sequences=n): the n
                   candidates with their logprobs, and the one LoRAX's router returns (the highest
                   mean log-probability per generated token, float32, first on ties)
  truncate         tokenizer(text, truncation=True, max_length=N) with truncation_side "left", as
                   LoRAX tokenizes a truncated prompt, on the real T5 and BART tokenizers
  merges           equal-rank PEFT adapters (made here) merged by PeftModel.add_weighted_adapter
                   after torch.manual_seed(seed), then greedy generate with the merged adapter; each
                   adapter's own greedy outputs; the linear modules in named_modules() order

Layout under --out/inspect:
  records.json                      everything above (see the keys)
  merge/<base>/adapters/<name>/     the adapters the merges combine
"""
import json
import os
import shutil

import hf_compat  # noqa: F401  (before generate())
import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

from generate_oracle import new_tokens
from llama_variants import CAUSAL_FAMILIES
from lora_init import randomize_lora

BASES = ["t5", "bart", "bloom", "llama", "mistral", "qwen2"]
ALT_ADAPTERS = ["", "all", "patterns"]
# A request's params as the engine takes them ("seed": torch.manual_seed before generate;
# "top_alternatives" and "logprobs" are the engine's: they ask for what output_scores gives).
ALT_SETTINGS = [
    {"max_new_tokens": 10, "top_alternatives": 5, "logprobs": True},
    {"max_new_tokens": 10, "top_alternatives": 3, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2},
    {"max_new_tokens": 10, "do_sample": True, "top_k": 8, "temperature": 0.8, "seed": 21, "top_alternatives": 6,
     "logprobs": True},
    # top_k 4 leaves 4 finite scores: at most 4 alternatives although 7 are asked for
    {"max_new_tokens": 10, "do_sample": True, "top_k": 4, "seed": 22, "top_alternatives": 7},
    {"max_new_tokens": 10, "do_sample": True, "top_k": 0, "top_p": 0.9, "seed": 23, "top_alternatives": 20},
    {"max_new_tokens": 8, "do_sample": True, "num_return_sequences": 2, "top_k": 10, "seed": 24,
     "top_alternatives": 4, "logprobs": True},
]
PROMPT_LOGPROB_ADAPTERS = ["", "all", "patterns", "small"]
BEST_OF = [
    {"do_sample": True, "top_k": 20, "seed": 31, "best_of": 3, "max_new_tokens": 8},
    {"do_sample": True, "temperature": 1.3, "top_k": 0, "seed": 32, "best_of": 4, "max_new_tokens": 8,
     "logprobs": True},
]
TRUNCATE_TEXTS = ["translate English to German: The house is wonderful and the garden is large.",
                  "Hello world", "a b c d e f g h i j k l m n o p"]
TRUNCATE_LENGTHS = [2, 3, 5, 9]
MERGE_NEW = 12
LLAMA_LINEARS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# (name, r, lora_alpha, init_lora_weights, use_rslora, targets per base; "llama" serves the family)
MERGE_ADAPTERS = [
    ("m_a", 4, 8, True, False, {"t5": ["q", "k", "v", "o", "wi", "wo"],
                                "bart": ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"],
                                "bloom": ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"],
                                "llama": LLAMA_LINEARS}),
    ("m_b", 4, 16, "gaussian", False, {"t5": ["q", "v", "o"], "bart": ["q_proj", "v_proj"],
                                        "bloom": ["query_key_value"], "llama": ["q_proj", "v_proj", "o_proj"]}),
    ("m_c", 4, 6, False, True, {"t5": ["wi", "wo", "k"], "bart": ["fc1", "fc2", "k_proj"],
                                "bloom": ["dense_h_to_4h", "dense_4h_to_h", "dense"],
                                "llama": ["gate_proj", "up_proj", "down_proj", "k_proj"]}),
]
# As a request's "merged_adapters" ("seed": torch.manual_seed right before add_weighted_adapter).
MERGES = [
    {"ids": ["m_a", "m_b"], "weights": [0.7, 0.5], "merge_strategy": "linear"},
    {"ids": ["m_a", "m_b", "m_c"], "weights": [0.6, 0.9, 0.4], "merge_strategy": "ties", "density": 0.5,
     "majority_sign_method": "total"},
    {"ids": ["m_c", "m_a"], "weights": [0.8, 0.3], "merge_strategy": "ties", "density": 0.4,
     "majority_sign_method": "frequency"},
    {"ids": ["m_a", "m_c"], "weights": [1.0, 0.8], "merge_strategy": "dare_linear", "density": 0.6, "seed": 1234},
    {"ids": ["m_b", "m_a", "m_c"], "weights": [0.5, 0.5, 1.2], "merge_strategy": "dare_ties", "density": 0.7,
     "majority_sign_method": "frequency", "seed": 99},
    {"ids": ["m_c", "m_b"], "weights": [0.9, 0.9], "merge_strategy": "dare_linear", "density": 0.5, "seed": 7},
    # one adapter: PEFT merges it linearly whatever the strategy
    {"ids": ["m_b"], "weights": [0.6], "merge_strategy": "ties", "density": 0.5},
]
NOT_HF = {"seed", "top_alternatives", "logprobs", "best_of"}


def lora_base(root, name):
    bdir = os.path.join(root, "lora", name)
    with open(os.path.join(bdir, "records.json")) as f:
        return bdir, json.load(f)


def load(bdir, rec, adapter=None):
    cls = AutoModelForCausalLM if rec["family"] in CAUSAL_FAMILIES else AutoModelForSeq2SeqLM
    model = cls.from_pretrained(os.path.join(bdir, rec["model_dir"]), torch_dtype=torch.float32).eval()
    if adapter:
        model = PeftModel.from_pretrained(model, os.path.join(bdir, "adapters", adapter)).eval()
    return model


def alternatives_of(scores, k):
    lp = torch.log_softmax(scores.float(), -1)
    values, ids = torch.topk(lp, k)
    return [[int(i), float(v)] for v, i in zip(values.tolist(), ids.tolist()) if v != float("-inf")]


def run(model, family, prompt, params, eos):
    """HF's rows for one request, each with its tokens, logprobs and alternatives per token."""
    ids = torch.tensor([prompt])
    if "seed" in params:
        torch.manual_seed(params["seed"])
    hf = {k: v for k, v in params.items() if k not in NOT_HF}
    if params.get("best_of", 1) > 1:
        hf["num_return_sequences"] = params["best_of"]
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), output_scores=True,
                             return_dict_in_generate=True, **hf)
    k = params.get("top_alternatives", 0)
    rows = []
    for r, seq in enumerate(out.sequences):
        tokens = new_tokens(seq.tolist(), family, len(prompt), eos, None)
        rows.append({"tokens": tokens,
                     "logprobs": [float(torch.log_softmax(out.scores[t][r].float(), -1)[tok])
                                  for t, tok in enumerate(tokens)],
                     "alternatives": [alternatives_of(out.scores[t][r], k) for t in range(len(tokens))] if k else []})
    return rows


def alternatives(root):
    out = []
    for base in BASES:
        bdir, rec = lora_base(root, base)
        for adapter in ALT_ADAPTERS:
            model = load(bdir, rec, adapter)
            for i, prompt in enumerate(rec["prompts"]):
                for params in ALT_SETTINGS:
                    out.append({"base": base, "adapter": adapter, "prompt_index": i, "params": params,
                                "rows": run(model, rec["family"], prompt, params, rec["eos_token_id"])})
    return out


def prompt_logprobs(root):
    out = []
    for base in BASES:
        bdir, rec = lora_base(root, base)
        family = rec["family"]
        g = torch.Generator()
        for adapter in PROMPT_LOGPROB_ADAPTERS:
            model = load(bdir, rec, adapter)
            vocab = model.config.vocab_size
            g.manual_seed(777)   # the same targets for every adapter
            for i, prompt in enumerate(rec["prompts"]):
                with torch.no_grad():
                    if family in CAUSAL_FAMILIES:
                        logits = model(input_ids=torch.tensor([prompt])).logits[0]
                        lp = torch.log_softmax(logits.float(), -1)
                        values = [None] + [float(lp[j, prompt[j + 1]]) for j in range(len(prompt) - 1)]
                        out.append({"base": base, "adapter": adapter, "prompt_index": i, "tokens": prompt,
                                    "logprobs": values})
                    else:
                        target = torch.randint(4, vocab, (4 + i,), generator=g).tolist() + [rec["eos_token_id"]]
                        logits = model(input_ids=torch.tensor([prompt]), labels=torch.tensor([target])).logits[0]
                        lp = torch.log_softmax(logits.float(), -1)
                        out.append({"base": base, "adapter": adapter, "prompt_index": i, "target_ids": target,
                                    "tokens": target, "logprobs": [float(lp[j, t]) for j, t in enumerate(target)]})
    return out


def lorax_best(rows):
    """LoRAX's router (generate_best_of): the mean of the tokens' logprobs in float32, strictly
    greater than the best so far (starting from f32::MIN), so the first wins a tie."""
    best, best_value = 0, np.finfo(np.float32).min
    for i, row in enumerate(rows):
        total = np.float32(0)
        for lp in row["logprobs"]:
            total = np.float32(total + np.float32(lp))
        mean = np.float32(total / np.float32(len(row["logprobs"])))
        if mean > best_value:
            best, best_value = i, mean
    return best, float(best_value)


def best_of(root):
    out = []
    for base in BASES:
        bdir, rec = lora_base(root, base)
        for adapter in ["", "all"]:
            model = load(bdir, rec, adapter)
            for i, prompt in enumerate(rec["prompts"]):
                for params in BEST_OF:
                    rows = run(model, rec["family"], prompt, params, rec["eos_token_id"])
                    best, mean = lorax_best(rows)
                    out.append({"base": base, "adapter": adapter, "prompt_index": i, "params": params,
                                "rows": rows, "best_index": best, "best_mean_logprob": mean})
    return out


def truncation():
    root = os.environ.get("LORASCOPE_SHARED_TOKENIZERS", "/work/shared/tokenizers")
    out = []
    for name in ["t5", "bart"]:
        tdir = os.path.join(root, name)
        if not os.path.isdir(tdir):
            print(f"  truncate: {tdir} missing, no {name} cases")
            continue
        tok = AutoTokenizer.from_pretrained(tdir)
        tok.truncation_side = "left"
        for text in TRUNCATE_TEXTS:
            full = tok(text).input_ids
            for n in TRUNCATE_LENGTHS:
                if n <= tok.num_special_tokens_to_add():
                    continue
                out.append({"tokenizer": name, "text": text, "truncate": n, "full_ids": full,
                            "ids": tok(text, truncation=True, max_length=n).input_ids})
    return out


def make_merge_adapters(root, out_dir, base):
    bdir, rec = lora_base(root, base)
    adir = os.path.join(out_dir, "merge", base, "adapters")
    task = "CAUSAL_LM" if rec["family"] in CAUSAL_FAMILIES else "SEQ_2_SEQ_LM"
    for k, (name, r, alpha, init, rslora, targets) in enumerate(MERGE_ADAPTERS):
        model = load(bdir, rec)
        config = LoraConfig(task_type=task, r=r, lora_alpha=alpha, lora_dropout=0.0, init_lora_weights=init,
                            use_rslora=rslora, target_modules=targets[base if base in targets else "llama"])
        peft_model = get_peft_model(model, config)
        randomize_lora(peft_model, 9000 + 31 * k + len(base), b_scale=0.5)
        peft_model.save_pretrained(os.path.join(adir, name), safe_serialization=True)
    return bdir, rec, adir


def greedy_all(model, rec):
    out = []
    for prompt in rec["prompts"]:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            seq = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=MERGE_NEW,
                                 do_sample=False, num_beams=1)[0].tolist()
        out.append(new_tokens(seq, rec["family"], len(prompt), rec["eos_token_id"], None))
    return out


def merges(root, out_dir):
    out = []
    for base in BASES:
        bdir, rec, adir = make_merge_adapters(root, out_dir, base)
        constituents = {}
        for name, *_ in MERGE_ADAPTERS:
            model = PeftModel.from_pretrained(load(bdir, rec), os.path.join(adir, name)).eval()
            constituents[name] = greedy_all(model, rec)
        for spec in MERGES:
            model = load(bdir, rec)
            model = PeftModel.from_pretrained(model, os.path.join(adir, spec["ids"][0]), adapter_name=spec["ids"][0])
            for name in dict.fromkeys(spec["ids"][1:]):
                model.load_adapter(os.path.join(adir, name), adapter_name=name)
            torch.manual_seed(spec.get("seed", 0))
            model.add_weighted_adapter(spec["ids"], spec["weights"], "merged", combination_type=spec["merge_strategy"],
                                       density=spec.get("density"),
                                       majority_sign_method=spec.get("majority_sign_method", "total"))
            model.set_adapter("merged")
            model.eval()
            out.append({"base": base, "merged_adapters": spec, "greedy": greedy_all(model, rec)})
        # The order in which PEFT visits modules (its random draws follow it).
        order = [name for name, m in load(bdir, rec).named_modules() if isinstance(m, torch.nn.Linear)]
        out.append({"base": base, "constituents": constituents, "module_order": order})
        print(f"  merges on {base}: {len(MERGES)} merges")
    return out


def main():
    args = hf_compat.quiet_oracle_args()
    out_dir = os.path.join(args.out, "inspect")
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    records = {"versions": hf_compat.versions(),
               "alternatives": alternatives(args.out),
               "prompt_logprobs": prompt_logprobs(args.out),
               "best_of": best_of(args.out),
               "truncate": truncation(),
               "merges": merges(args.out, out_dir)}
    with open(os.path.join(out_dir, "records.json"), "w") as f:
        json.dump(records, f)
    print(f"inspect oracle: {len(records['alternatives'])} alternatives runs, "
          f"{len(records['prompt_logprobs'])} prompt logprob cases, {len(records['best_of'])} best_of runs, "
          f"{len(records['truncate'])} truncation cases, merges -> {out_dir}")


if __name__ == "__main__":
    main()
