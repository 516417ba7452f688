#!/usr/bin/env python3
"""Writes the committed seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/).

Run with the oracle's Python (scripts/setup-oracle): .venv-oracle/bin/python tests/fuzz/make_seeds.py
Sources, all small and all from the repository or from the libraries that define the formats:
  - safetensors files written by the safetensors library itself (numpy API), every dtype we read,
    metadata, empty tensors, a two-shard checkpoint with the index transformers writes;
  - the demo pack's config.json / generation_config.json (saved by transformers) for T5, BART, BLOOM;
  - the demo pack's PEFT adapter_config.json files with tiny tensors of the rank they declare, under
    the names PEFT saves (the demo's own weights are 50-370 KB each, too big for a seed);
  - the demo pack's tokenizer.json / tokenizer_config.json / vocab.json / merges.txt;
  - spiece.model files trained by SentencePiece (tests/oracle/spm_model_oracle.py's tiny, BPE and
    byte-fallback models);
  - tests/data/tokenizer_corpus.json texts for the tokenize target; request lines and workloads
    as the README and the man page show them; parameter objects and serve's HTTP requests as
    lorax-client, OpenAI clients and curl send them.
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


def tokenizer_seeds():
    bart, bloom = os.path.join(DEMO, "bart"), os.path.join(DEMO, "bloom")
    write("tokenizer_files", "bloom-json", SEP.join([read(bloom, "tokenizer.json"), read(bloom, "tokenizer_config.json")]))
    write("tokenizer_files", "bart-json", SEP.join([read(bart, "tokenizer.json"), read(bart, "tokenizer_config.json")]))
    write("tokenizer_files", "bart-vocab-merges",
          SEP.join([b"", read(bart, "tokenizer_config.json"), read(bart, "vocab.json"), read(bart, "merges.txt")]))

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "oracle", "spm_model_oracle.py"), "--out", tmp],
                       cwd=os.path.join(ROOT, "tests", "oracle"), check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, LORASCOPE_SHARED_TOKENIZERS=os.path.join(tmp, "absent")))
        for name in ("tiny", "bpe", "unigram_bytes"):
            write("spiece_model", name, read(tmp, "spm_model", name + ".model"))

    with open(os.path.join(ROOT, "tests", "data", "tokenizer_corpus.json"), encoding="utf-8") as f:
        corpus = [t for t in json.load(f) if 0 < len(t.encode()) < 300]
    for i, text in enumerate(corpus[:40]):
        # byte 0 picks the tokenizer, byte 1 the flags (fuzz_tokenize.cpp)
        write("tokenize", f"text-{i:02d}", bytes([i % 7, i % 4]) + text.encode())


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


def main():
    for t in ("safetensors", "safetensors_index", "model_config", "adapter", "tokenizer_files", "spiece_model",
              "tokenize", "jsonl_request", "bench_workload", "params", "http_request"):
        out_dir.cache[t] = out_dir(t)
    safetensors_seeds()
    config_seeds()
    adapter_seeds()
    tokenizer_seeds()
    cli_seeds()
    serve_seeds()
    total = sum(os.path.getsize(os.path.join(d, f)) for d in out_dir.cache.values() for f in os.listdir(d))
    print(f"seeds written under {os.path.join(HERE, 'corpus')}: {total} bytes")


if __name__ == "__main__":
    main()
