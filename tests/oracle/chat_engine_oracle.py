#!/usr/bin/env python3
"""Oracle step `oracle_chat_engine`: a tiny BLOOM whose tokenizer_config.json carries a chat
template, for the engine's conversation requests (tests/chat/test_engine_chat.cpp).

transformers itself records, for each conversation: the rendered prompt, apply_chat_template's
token ids (tokenize=True: no special tokens added) and greedy generate() on those ids (with a
repetition penalty); and the
template's refusal of an unknown role. The tokenizer is tokenizers_oracle's BLOOM-style byte-level
BPE with two added special tokens; the template is written here (ChatML-like, not any model's).

Layout under --out/chat_engine:
  model/          save_pretrained: config, safetensors, tokenizer files, tokenizer_config.json with the template
  plain/          the same checkpoint (links) whose tokenizer_config.json has no chat_template
  records.json    {"versions", "max_new_tokens", "repetition_penalty", "conversations": [...], "refusal": {...}}
"""
import argparse
import json
import os
import shutil

import hf_compat  # noqa: F401  (offline env, version record)
import torch
from transformers import AutoTokenizer, BloomConfig, BloomForCausalLM

from models_oracle import randomize
from tokenizer_records import load_corpus
from tokenizers_oracle import build_bloom_style

MAX_NEW_TOKENS = 8
# Greedy with a repetition penalty: a tiny random model repeats one token otherwise, and outputs that
# differ between conversations show the prompts differ.
REPETITION_PENALTY = 2.0

TEMPLATE = (
    "{{- bos_token }}"
    "{%- if tools %}{{- '<|im_start|>tools\\n' + tools | tojson + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role not in ['system', 'user', 'assistant', 'tool'] %}"
    "{{- raise_exception('Unknown role: ' + message.role) }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

CONVERSATIONS = {
    "single_user": {"messages": [{"role": "user", "content": "Hello world"}]},
    "system_and_turns": {"messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "The quick brown fox"},
                                      {"role": "assistant", "content": "jumps over the lazy dog."},
                                      {"role": "user", "content": "  And then?  "}]},
    "tools": {"messages": [{"role": "user", "content": "Weather?"}],
              "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]},
}
REFUSAL = {"messages": [{"role": "developer", "content": "x"}]}


def build(out_dir):
    corpus = load_corpus()
    mdir = os.path.join(out_dir, "model")
    tok = build_bloom_style(mdir, corpus)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = TEMPLATE
    config = BloomConfig(vocab_size=len(tok), hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
                         attention_dropout=0.0, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(7)
    model = BloomForCausalLM(config).eval()
    randomize(model, 7)
    model.save_pretrained(mdir, safe_serialization=True)
    tok.save_pretrained(mdir)
    return mdir


def plain_copy(mdir, out_dir):
    """The checkpoint without a chat template: links to every file, tokenizer_config.json rewritten."""
    pdir = os.path.join(out_dir, "plain")
    os.makedirs(pdir)
    for name in os.listdir(mdir):
        if name != "tokenizer_config.json":
            os.symlink(os.path.abspath(os.path.join(mdir, name)), os.path.join(pdir, name))
    with open(os.path.join(mdir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    del config["chat_template"]
    with open(os.path.join(pdir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out_dir = os.path.join(args.out, "chat_engine")
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    mdir = build(out_dir)
    plain_copy(mdir, out_dir)
    tok = AutoTokenizer.from_pretrained(mdir)
    model = BloomForCausalLM.from_pretrained(mdir, torch_dtype=torch.float32).eval()
    records = {"versions": hf_compat.versions(), "max_new_tokens": MAX_NEW_TOKENS,
               "repetition_penalty": REPETITION_PENALTY, "conversations": []}
    for name, conv in CONVERSATIONS.items():
        tools = conv.get("tools")
        text = tok.apply_chat_template(conv["messages"], tools=tools, add_generation_prompt=True, tokenize=False)
        ids = tok.apply_chat_template(conv["messages"], tools=tools, add_generation_prompt=True, tokenize=True)
        out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                             repetition_penalty=REPETITION_PENALTY, pad_token_id=tok.pad_token_id)[0].tolist()
        records["conversations"].append(dict(conv, name=name, prompt=text, prompt_ids=ids, token_ids=out[len(ids):]))
    try:
        tok.apply_chat_template(REFUSAL["messages"], add_generation_prompt=True, tokenize=False)
        raise SystemExit("the refusal case rendered")
    except Exception as e:  # jinja2's TemplateError from raise_exception
        records["refusal"] = dict(REFUSAL, error=str(e), error_type=type(e).__name__)
    with open(os.path.join(out_dir, "records.json"), "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1)
    lengths = [len(c["prompt_ids"]) for c in records["conversations"]]
    print(f"  chat_engine: vocab {len(tok)}, prompts of {lengths} tokens, refusal: {records['refusal']['error']}")


if __name__ == "__main__":
    main()
