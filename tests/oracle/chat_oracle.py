#!/usr/bin/env python3
"""Oracle step `oracle_chat`: transformers' own apply_chat_template(tokenize=False) renders

  - every template in ../shared/chat-templates (LORASCOPE_SHARED_CHAT_TEMPLATES) x the conversations
    of chat_cases.py, with add_generation_prompt true and false, with each model's bos/eos;
  - the same templates loaded from a tokenizer_config.json written by save_pretrained, in its string
    form and its list-of-named-templates form (tokenizer chosen by AutoTokenizer.from_pretrained);
  - the small templates of chat_synthetic.py, through transformers' compiled jinja2 environment.

strftime_now reads a fixed clock (chat_cases.FIXED_NOW), patched where transformers looks it up.
A render that raises records the exception's type and message instead (Gemma refusing a system
turn: TemplateError('System role not supported')).

Layout under --out/chat:
  records.json          {"versions", "now", "renders", "configs", "synthetic", ...}
  configs/<name>/       tokenizer_config.json (+ tokenizer.json, special_tokens_map.json)
"""
import argparse
import datetime
import json
import os
import shutil

import hf_compat  # noqa: F401  (offline env, version record)

import jinja2
import transformers.utils.chat_template_utils as chat_template_utils
from tokenizers import Tokenizer, models
from transformers import AutoTokenizer, PreTrainedTokenizerFast

import chat_cases
import chat_synthetic


class FixedClock(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(*chat_cases.FIXED_NOW)


# transformers' strftime_now calls datetime.now() through this module's global.
chat_template_utils.datetime = FixedClock


def shared_templates_dir():
    explicit = os.environ.get("LORASCOPE_SHARED_CHAT_TEMPLATES")
    if explicit:
        return explicit
    tokenizers = os.environ.get("LORASCOPE_SHARED_TOKENIZERS", os.path.join("..", "..", "..", "shared", "tokenizers"))
    return os.path.join(os.path.dirname(os.path.abspath(tokenizers)), "chat-templates")


def make_tokenizer(special_tokens):
    """A PreTrainedTokenizerFast carrying only what apply_chat_template reads: special tokens."""
    vocab = {"[UNK]": 0}
    for token in special_tokens.values():
        vocab.setdefault(token, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, **special_tokens)


def render(tokenizer, messages, tools, variables, add_generation_prompt):
    try:
        text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                             tokenize=False, **(variables or {}))
        return {"expected": text}
    except Exception as e:  # the template's refusal, or any other error jinja2 raises
        return {"error": str(e), "error_type": type(e).__name__}


def conversation_cases(template_file, names=None):
    for name, (messages, tools, variables, which) in chat_cases.CONVERSATIONS.items():
        if names is not None and name not in names:
            continue
        if chat_cases.applies(which, template_file):
            yield name, messages, tools, variables


def render_shared(templates_dir):
    renders = []
    for template_file in sorted(chat_cases.SPECIAL_TOKENS):
        with open(os.path.join(templates_dir, template_file), encoding="utf-8") as f:
            source = f.read()
        special = chat_cases.SPECIAL_TOKENS[template_file]
        tokenizer = make_tokenizer(special)
        tokenizer.chat_template = source
        for name, messages, tools, variables in conversation_cases(template_file):
            for agp in (True, False):
                record = {"template": template_file, "conversation": name, "messages": messages, "tools": tools,
                          "variables": variables, "add_generation_prompt": agp, "special_tokens": special}
                record.update(render(tokenizer, messages, tools, variables, agp))
                renders.append(record)
    return renders


CONFIG_CONVERSATIONS = {"single_user", "system_multi_turn_ends_assistant", "tools_question", "roles_do_not_alternate"}


def config_dir_cases(out_dir, templates_dir):
    """Templates saved into tokenizer_config.json by save_pretrained, loaded back by AutoTokenizer."""
    def source(name):
        with open(os.path.join(templates_dir, name), encoding="utf-8") as f:
            return f.read()

    setups = [("string_" + f.split(".jinja")[0], chat_cases.SPECIAL_TOKENS[f], source(f), f) for f in sorted(chat_cases.SPECIAL_TOKENS)]
    setups.append(("list_default_tool_use", chat_cases.SPECIAL_TOKENS["meta-llama-Llama-3.1-8B-Instruct.jinja"],
                   {"default": source("meta-llama-Llama-3.1-8B-Instruct.jinja"),
                    "tool_use": source("Qwen-Qwen2.5-7B-Instruct.jinja")}, None))
    setups.append(("list_no_default", chat_cases.SPECIAL_TOKENS["Qwen-Qwen3-0.6B.jinja"],
                   {"rag": source("ibm-granite-granite-3.3-2B-Instruct.jinja"),
                    "tool_use": source("Qwen-Qwen3-0.6B.jinja")}, None))
    configs = []
    for name, special, template, template_file in setups:
        cdir = os.path.join(out_dir, "configs", name)
        if os.path.isdir(cdir):
            shutil.rmtree(cdir)
        saving = make_tokenizer(special)
        saving.chat_template = template
        saving.save_pretrained(cdir)
        loaded = AutoTokenizer.from_pretrained(cdir)
        renders = []
        for conv, (messages, tools, variables, which) in chat_cases.CONVERSATIONS.items():
            if conv not in CONFIG_CONVERSATIONS or (template_file and not chat_cases.applies(which, template_file)):
                continue
            for agp in (True, False):
                record = {"conversation": conv, "messages": messages, "tools": tools, "variables": variables,
                          "add_generation_prompt": agp}
                record.update(render(loaded, messages, tools, variables, agp))
                renders.append(record)
        configs.append({"dir": os.path.join("configs", name), "form": "list" if isinstance(template, dict) else "string",
                        "renders": renders})
    return configs


def render_synthetic():
    records = []
    for case in chat_synthetic.CASES:
        name, source = case[0], case[1]
        record = {"name": name, "source": source, "beyond": len(case) > 2 and case[2]}
        try:
            compiled = chat_template_utils._compile_jinja_template(source)
            record["expected"] = compiled.render(messages=chat_synthetic.MESSAGES, tools=None, documents=None,
                                                 add_generation_prompt=True, **chat_synthetic.CONTEXT)
        except Exception as e:
            record.update({"error": str(e), "error_type": type(e).__name__})
        records.append(record)
    return records


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out_dir = os.path.join(args.out, "chat")
    os.makedirs(out_dir, exist_ok=True)
    records = {"versions": dict(hf_compat.versions(), jinja2=jinja2.__version__), "now": list(chat_cases.FIXED_NOW),
               "synthetic_context": chat_synthetic.CONTEXT, "synthetic_messages": chat_synthetic.MESSAGES,
               "synthetic": render_synthetic()}
    templates_dir = shared_templates_dir()
    if os.path.isdir(templates_dir):
        records["templates_dir"] = os.path.abspath(templates_dir)
        records["renders"] = render_shared(templates_dir)
        records["configs"] = config_dir_cases(out_dir, templates_dir)
    else:
        records["skipped"] = f"no shared chat templates at {templates_dir}"
    with open(os.path.join(out_dir, "records.json"), "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1)
    renders = records.get("renders", [])
    errors = sum(1 for r in renders if "error" in r)
    print(f"  chat: {len(renders)} renders ({errors} refused), {len(records.get('configs', []))} config dirs, "
          f"{len(records['synthetic'])} synthetic templates")


if __name__ == "__main__":
    main()
