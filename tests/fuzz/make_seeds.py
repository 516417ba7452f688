#!/usr/bin/env python3
"""Writes the committed seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/).

Run with the oracle's Python (scripts/setup-oracle): .venv-oracle/bin/python tests/fuzz/make_seeds.py
Sources, all small and all from the repository or from the libraries that define the formats:
  - safetensors files written by the safetensors library itself (numpy API), every dtype we read,
    metadata, empty tensors, a two-shard checkpoint with the index transformers writes;
  - the demo pack's config.json / generation_config.json (saved by transformers) for T5, BART, BLOOM,
    and configs transformers writes for Llama 3.1-, Mistral- and Qwen2.5-like models (GQA, rope
    scaling, sliding windows, eos lists);
  - the demo pack's PEFT adapter_config.json files with tiny tensors of the rank they declare, under
    the names PEFT saves (the demo's own weights are 50-370 KB each, too big for a seed);
  - the demo pack's tokenizer.json / tokenizer_config.json / vocab.json / merges.txt;
  - spiece.model files trained by SentencePiece (tests/oracle/spm_model_oracle.py's tiny, BPE and
    byte-fallback models), and the tokenizer files transformers' own classes write for them
    (LlamaTokenizerFast, MBart50TokenizerFast, PegasusTokenizerFast, MarianTokenizer); the demo BLOOM tokenizer.json re-pointed at the Llama 3 and Qwen2 Split
    patterns (the oracle's spelling, tests/oracle/tokenizers_oracle.py);
  - tests/data/tokenizer_corpus.json texts for the tokenize and split_pattern targets, with the
    oracle's stress strings; request lines and workloads as the README and the man page show them;
    parameter objects and serve's HTTP requests as lorax-client, OpenAI clients and curl send them;
  - for chat_template: the small templates of tests/oracle/chat_synthetic.py with their context,
    and a few chat layouts written here (ChatML-like, header-like with tools, a refusal). The
    published templates of ../shared/chat-templates are not copied: scripts/fuzz reads them in place.
Crashers kept as regression inputs are added to the same directories by hand (crash-*), never by
this script, which only (re)writes the seed-*  files.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import save

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEMO = os.path.join(ROOT, "resources", "demo")
SEP = b"\n@@lorascope-part@@\n"   # fuzz_support.h: kPartSeparator


def out_dir(target):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        if name.startswith("seed-"):
            os.remove(os.path.join(d, name))
    return d


def write(target, name, data):
    with open(os.path.join(out_dir.cache[target], "seed-" + name), "wb") as f:
        f.write(data)


out_dir.cache = {}


def read(*parts):
    with open(os.path.join(*parts), "rb") as f:
        return f.read()


def safetensors_seeds():
    rng = np.random.default_rng(7)
    write("safetensors", "f32", save({"w": rng.standard_normal((2, 3)).astype(np.float32)}))
    write("safetensors", "all-dtypes", save({
        "f64": np.arange(2, dtype=np.float64), "f32": np.arange(3, dtype=np.float32),
        "f16": np.arange(4, dtype=np.float16), "i64": np.arange(2, dtype=np.int64),
        "i32": np.arange(2, dtype=np.int32), "i16": np.arange(2, dtype=np.int16),
        "i8": np.arange(3, dtype=np.int8), "u8": np.arange(3, dtype=np.uint8),
        "bool": np.array([True, False]), "u16": np.arange(2, dtype=np.uint16)}))
    write("safetensors", "metadata-empty", save({"empty": np.zeros((0, 4), np.float32),
                                                 "scalar": np.array(1.5, np.float32)},
                                                metadata={"format": "pt", "note": "caf\u00e9"}))
    write("safetensors", "no-tensors", save({}, metadata={"format": "pt"}))
    # BF16 is not a numpy dtype: the header is written by hand the way safetensors lays it out.
    header = json.dumps({"b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    write("safetensors", "bf16", len(header).to_bytes(8, "little") + header + b"\x80\x3f\x00\x40")

    shard1 = save({"a": np.ones((2, 2), np.float32), "b": np.arange(3, dtype=np.int64)})
    shard2 = save({"c": np.zeros(4, np.float16)})
    index = json.dumps({"metadata": {"total_size": 16 + 24 + 8},
                        "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                                       "c": "model-00002-of-00002.safetensors"}}, indent=2).encode()
    write("safetensors_index", "two-shards", SEP.join([index, shard1, shard2]))
    one = json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}}).encode()
    write("safetensors_index", "one-shard", SEP.join([one, shard1]))


def config_seeds():
    for model in ("t5", "bart", "bloom"):
        cfg = read(DEMO, model, "config.json")
        gen = read(DEMO, model, "generation_config.json")
        write("model_config", model, SEP.join([cfg, gen]))
        write("model_config", model + "-no-generation-config", cfg)
    from transformers import GenerationConfig, LlamaConfig, MistralConfig, Qwen2Config
    llama = LlamaConfig(vocab_size=128256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=8, num_key_value_heads=2, head_dim=16, attention_bias=True,
                        max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
                        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                        bos_token_id=128000, eos_token_id=[128001, 128008, 128009])
    mistral = MistralConfig(vocab_size=32000, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=1, sliding_window=4096)
    qwen2 = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                        num_attention_heads=14, num_key_value_heads=2, rope_theta=1000000.0, tie_word_embeddings=True,
                        use_sliding_window=True, sliding_window=256, max_window_layers=21,
                        rope_scaling={"type": "yarn", "factor": 4.0}, bos_token_id=151643, eos_token_id=151643)
    gen = GenerationConfig(bos_token_id=151643, eos_token_id=[151645, 151643], pad_token_id=151643,
                           repetition_penalty=1.1, top_k=20, do_sample=True, temperature=0.7)
    write("model_config", "llama", SEP.join([llama.to_json_string().encode(),
                                             GenerationConfig.from_model_config(llama).to_json_string().encode()]))
    write("model_config", "mistral-no-generation-config", mistral.to_json_string().encode())
    write("model_config", "qwen2", SEP.join([qwen2.to_json_string().encode(), gen.to_json_string().encode()]))


def adapter_seeds():
    rng = np.random.default_rng(11)
    for model in ("t5", "bart", "bloom"):
        for name in sorted(os.listdir(os.path.join(DEMO, model, "adapters"))):
            d = os.path.join(DEMO, model, "adapters", name)
            cfg_bytes = read(d, "adapter_config.json")
            cfg = json.loads(cfg_bytes)
            with open(os.path.join(d, "adapter_model.safetensors"), "rb") as f:
                n = int.from_bytes(f.read(8), "little")
                names = sorted(k for k in json.loads(f.read(n)) if k != "__metadata__")
            tensors = {}
            for t in names[:4]:  # two modules: enough structure, small
                r = cfg["r"]
                shape = (r, 3) if ".lora_A." in t else (5, r)
                tensors[t] = rng.standard_normal(shape).astype(np.float32)
            # keep each module's A and B together
            modules = {t.rsplit(".lora_", 1)[0] for t in tensors}
            for m in modules:
                for part, shape in (("A", (cfg["r"], 3)), ("B", (5, cfg["r"]))):
                    tensors.setdefault(f"{m}.lora_{part}.weight", rng.standard_normal(shape).astype(np.float32))
            write("adapter", f"{model}-{name}", SEP.join([cfg_bytes, save(tensors, metadata={"format": "pt"})]))


def saved(tok, names=("tokenizer.json", "tokenizer_config.json")):
    """The files a transformers tokenizer's save_pretrained writes, as tokenizer_files parts."""
    with tempfile.TemporaryDirectory() as d:
        tok.save_pretrained(d)
        return {n: read(d, n) for n in names if os.path.exists(os.path.join(d, n))}


def tokenizer_files_seed(name, files):
    # fuzz_tokenizer_files.cpp's part order; an empty part is an absent file.
    order = ["tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model",
             "sentencepiece.bpe.model", "source.spm", "target.spm"]
    parts = [files.get(n, b"") for n in order]
    while parts and not parts[-1]:
        parts.pop()
    write("tokenizer_files", name, SEP.join(parts))


def byte_level_with_split(pattern, nfc):
    config = json.loads(read(DEMO, "bloom", "tokenizer.json"))
    config["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    if nfc:
        config["normalizer"] = {"type": "NFC"}
    return json.dumps(config, ensure_ascii=False).encode()


def spm_tokenizer_seeds(models):
    from transformers import LlamaTokenizerFast, MarianTokenizer, MBart50TokenizerFast, PegasusTokenizerFast
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    from tokenizers_oracle import LLAMA3_SPLIT, QWEN2_SPLIT
    tokenizer_files_seed("llama3-json", {"tokenizer.json": byte_level_with_split(LLAMA3_SPLIT, False)})
    tokenizer_files_seed("qwen2-json", {"tokenizer.json": byte_level_with_split(QWEN2_SPLIT, True),
                                        "tokenizer_config.json": b'{"tokenizer_class": "Qwen2Tokenizer", "bos_token": null}'})
    bpe, tiny = models["bpe"], models["tiny"]
    tokenizer_files_seed("llama-json", saved(LlamaTokenizerFast(vocab_file=bpe, legacy=False, add_prefix_space=True)))
    tokenizer_files_seed("llama-model", {"tokenizer_config.json": b'{"tokenizer_class": "LlamaTokenizer"}',
                                         "tokenizer.model": read(bpe)})
    tokenizer_files_seed("nllb-model", {"tokenizer_config.json": b'{"tokenizer_class": "NllbTokenizer", "legacy_behaviour": true}',
                                        "sentencepiece.bpe.model": read(bpe)})
    tokenizer_files_seed("mbart50-json", saved(MBart50TokenizerFast(vocab_file=tiny, tgt_lang="ro_RO")))
    tokenizer_files_seed("pegasus-json", saved(PegasusTokenizerFast(vocab_file=tiny)))
    with tempfile.TemporaryDirectory() as d:
        vocab = os.path.join(d, "vocab.json")
        with open(vocab, "w") as f:
            json.dump({"</s>": 0, "<unk>": 1, "\u2581": 2, "a": 3, ">>fra<<": 4, "<pad>": 5}, f)
        files = saved(MarianTokenizer(tiny, tiny, vocab), ("tokenizer_config.json", "vocab.json", "source.spm", "target.spm"))
    tokenizer_files_seed("marian", files)


def tokenizer_seeds():
    bart, bloom = os.path.join(DEMO, "bart"), os.path.join(DEMO, "bloom")
    tokenizer_files_seed("bloom-json", {"tokenizer.json": read(bloom, "tokenizer.json"),
                                        "tokenizer_config.json": read(bloom, "tokenizer_config.json")})
    tokenizer_files_seed("bart-json", {"tokenizer.json": read(bart, "tokenizer.json"),
                                       "tokenizer_config.json": read(bart, "tokenizer_config.json")})
    tokenizer_files_seed("bart-vocab-merges", {"tokenizer_config.json": read(bart, "tokenizer_config.json"),
                                               "vocab.json": read(bart, "vocab.json"), "merges.txt": read(bart, "merges.txt")})

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "oracle", "spm_model_oracle.py"), "--out", tmp],
                       cwd=os.path.join(ROOT, "tests", "oracle"), check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, LORASCOPE_SHARED_TOKENIZERS=os.path.join(tmp, "absent")))
        models = {name: os.path.join(tmp, "spm_model", name + ".model") for name in ("tiny", "bpe", "unigram_bytes")}
        for name, path in models.items():
            write("spiece_model", name, read(path))
        spm_tokenizer_seeds(models)

    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    from tokenizer_records import STRESS
    with open(os.path.join(ROOT, "tests", "data", "tokenizer_corpus.json"), encoding="utf-8") as f:
        corpus = [t for t in json.load(f) if 0 < len(t.encode()) < 300]
    for i, text in enumerate(corpus[:40]):
        # byte 0 picks the tokenizer, byte 1 the flags (fuzz_tokenize.cpp)
        write("tokenize", f"text-{i:02d}", bytes([i % 7, i % 4]) + text.encode())
    for i, text in enumerate(STRESS):
        # every tokenizer of the zoo in turn, with target text and language codes (flags 4 and 8)
        write("tokenize", f"stress-{i:02d}", bytes([i, (i % 4) | 12 | (i << 4 & 0xF0)]) + text.encode())
        write("split_pattern", f"stress-{i:02d}", bytes([i % 4]) + text.encode())
    for i, text in enumerate(corpus[:40:2]):
        write("split_pattern", f"text-{i:02d}", bytes([i % 4]) + text.encode())


def cli_seeds():
    lines = [
        {"id": "a", "prompt": "translate English to German: Hello", "params": {"max_new_tokens": 8}},
        {"id": 2, "input_ids": [13, 27, 1], "adapter": "upper", "params": {"num_beams": 3, "length_penalty": 0.8,
                                                                             "early_stopping": "never"}},
        {"id": "s", "prompt": "x", "params": {"do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.9,
                                              "typical_p": 0.95, "min_p": 0.05, "seed": 42, "stop": ["\n", "."],
                                              "repetition_penalty": 1.2, "no_repeat_ngram_size": 2,
                                              "min_new_tokens": 2, "logprobs": True, "ignore_eos": False}},
        {"id": None, "prompt": "", "adapter": None, "params": {"max_new_tokens": None}},
    ]
    write("jsonl_request", "requests", b"\n".join(json.dumps(l).encode() for l in lines) + b"\n\nnot json\n[1]\n")
    for i, l in enumerate(lines):
        write("jsonl_request", f"line-{i}", json.dumps(l).encode())

    workloads = {
        "explicit": {"name": "w", "params": {"max_new_tokens": 4}, "adapters": ["a", "b"],
                     "requests": [{"prompt": "hi"}, {"input_ids": [5, 6, 7], "adapter": "c", "params": {"top_k": 3}}]},
        "synthetic": {"name": "W1", "synthetic": {"count": 3, "prompt_tokens": [2, 6], "seed": 1, "min_id": 5},
                      "params": {"max_new_tokens": 2}, "arrival": {"kind": "poisson", "rate": 50, "seed": 3}},
        "all": {"requests": [{"prompt": "a"}], "arrival": {"kind": "all"}},
    }
    for name, w in workloads.items():
        write("bench_workload", name, json.dumps(w, indent=1).encode())


def serve_seeds():
    """Parameter objects (deep and wide ones too), and HTTP requests as lorax-client and curl send
    them to serve's routes, one and several per connection."""
    params = [{"max_new_tokens": 4, "temperature": 0.7, "top_k": 5, "stop": ["\n", "END"], "seed": 3},
              {"do_sample": True, "top_p": 0.9, "typical_p": 0.95, "min_p": 0.1, "repetition_penalty": 1.2},
              {"num_beams": 3, "num_return_sequences": 2, "length_penalty": -1.5, "early_stopping": "never"},
              {"temperature": 1e-39}, {"max_new_tokens": 9223372036854775807}, {"stop": [[["x"]]]}]
    for i, p in enumerate(params):
        write("params", f"params-{i}", json.dumps(p).encode())
    write("params", "deep", b'{"stop": ' + b"[" * 70 + b"]" * 70 + b"}")

    def post(path, body, extra=b""):
        data = json.dumps(body).encode()
        return (b"POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\n"
                b"%sContent-Length: %d\r\n\r\n%s" % (path.encode(), extra, len(data), data))
    lorax = {"inputs": "sort: b a", "parameters": {"max_new_tokens": 3, "details": True, "adapter_id": "upper"}}
    requests = {
        "generate": post("/generate", lorax),
        "stream": post("/generate_stream", lorax),
        "root": post("/", dict(lorax, stream=True)),
        "openai": post("/v1/completions", {"model": "upper", "prompt": "sort: b a", "max_tokens": 3, "logprobs": 1,
                                           "echo": True, "stream": True, "stop": "x"}),
        "pipelined": post("/generate", lorax) + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
                     b"GET /v1/models HTTP/1.1\r\nAuthorization: Bearer tok\r\n\r\n",
        "chunked": (b"POST /generate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (b'{"inp', b'uts": "sort: b a"}', b""))),
        "no-token": post("/generate", lorax).replace(b"Authorization: Bearer tok\r\n", b""),
        "get-info": b"GET /info HTTP/1.1\r\nAuthorization: Bearer tok\r\n\r\nGET /metrics HTTP/1.0\r\nAuthorization: Bearer tok\r\n\r\n",
        "bad-params": post("/generate", {"inputs": "x", "parameters": {"temperature": 1e-39, "max_new_tokens": 2**63 - 1}}),
    }
    for name, data in requests.items():
        write("http_request", name, data)
# Chat layouts written for the seeds (not any model's template).
CHAT_LAYOUTS = {
    "chatml": "{%- for m in messages %}{{- '<|start|>' + m.role + '\\n' + m.content + '<|end|>\\n' }}{%- endfor %}"
              "{%- if add_generation_prompt %}{{- '<|start|>assistant\\n' }}{%- endif %}",
    "headers_tools": "{{- bos_token }}{%- if tools %}{%- for t in tools %}{{- t | tojson(indent=2) }}\n{%- endfor %}{%- endif %}\n"
                     "{%- set ns = namespace(n=0) %}{%- for m in messages if m.role != 'tool' %}{%- set ns.n = ns.n + 1 %}"
                     "[{{ m['role']|upper }}]{{ m['content']|trim }}{%- if m.tool_calls is defined %}{{ m.tool_calls|tojson }}{% endif %}\n"
                     "{%- endfor %}{{ ns.n }}",
    "refusal": "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system turn') }}{% endif %}"
               "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('alternate') }}"
               "{% endif %}{{ m.content.split('</think>')[-1].strip() }}{% endfor %}",
    "macro_loop": "{% macro turn(role, text) %}<{{ role }}>{{ text }}</{{ role }}>{% endmacro %}"
                  "{% for m in messages[::-1] %}{{ turn(m.role, m.content or '') }}{% else %}none{% endfor %}"
                  "{{ strftime_now('%d %B %Y') }}",
}


def chat_template_seeds():
    sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
    import chat_synthetic
    messages = json.dumps(chat_synthetic.MESSAGES).encode()
    variables = json.dumps(chat_synthetic.CONTEXT).encode()
    tools = json.dumps([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]).encode()
    for name, source in CHAT_LAYOUTS.items():
        write("chat_template", "layout-" + name, source.encode() + SEP + messages + SEP + tools)
    for case in chat_synthetic.CASES:
        write("chat_template", "synthetic-" + case[0], case[1].encode() + SEP + messages + SEP + SEP + variables)


def main():
    for t in ("safetensors", "safetensors_index", "model_config", "adapter", "tokenizer_files", "spiece_model",
              "tokenize", "split_pattern", "jsonl_request", "bench_workload", "params", "http_request",
              "chat_template"):
        out_dir.cache[t] = out_dir(t)
    safetensors_seeds()
    config_seeds()
    adapter_seeds()
    tokenizer_seeds()
    cli_seeds()
    serve_seeds()
    chat_template_seeds()
    total = sum(os.path.getsize(os.path.join(d, f)) for d in out_dir.cache.values() for f in os.listdir(d))
    print(f"seeds written under {os.path.join(HERE, 'corpus')}: {total} bytes")


if __name__ == "__main__":
    main()
