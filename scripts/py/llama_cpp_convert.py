"""W3's random BLOOM checkpoint to GGUF F32 with llama.cpp's own convert_hf_to_gguf.py (for
scripts/prepare-llama-cpp).

The bench checkpoints carry no tokenizer (every system is fed token ids), but the converter reads
one: a byte-level BPE tokenizer of exactly vocab_size entries is written beside symlinks to the
checkpoint (256 byte symbols, their pair merges, then filler tokens; BLOOM's special ids). The
converter names the pre-tokenizer by hashing how the tokenizer splits a test text; this made-up
one is unknown to it, so it is told "bloom" (the pre-tokenizer does not matter: llama-batched-bench
feeds token ids too).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile


def byte_symbols():
    """GPT-2's printable stand-ins for the 256 bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_tokenizer(path, vocab_size, specials):
    symbols = byte_symbols()
    vocab, merges = {}, []
    for name, i in specials.items():
        vocab[name] = i
    for s in symbols:
        vocab.setdefault(s, len(vocab))
    for a in symbols:
        for b in symbols:
            if len(vocab) >= vocab_size:
                break
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
                merges.append(f"{a} {b}")
    filler = 0
    while len(vocab) < vocab_size:
        vocab[f"<filler_{filler}>"] = len(vocab)
        filler += 1
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t, i in specials.items()],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "vocab": vocab, "merges": merges},
    }
    with open(os.path.join(path, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "bos_token": "<s>",
                   "eos_token": "</s>", "pad_token": "<pad>"}, f)


def shim_missing_torch_dtypes():
    """The bench venv has Debian's torch 1.13, which predates the float8 dtypes that llama.cpp's
    converter (0.3.36) names in class-level dtype tables. BLOOM's checkpoint holds none, so distinct
    stand-ins that no real tensor's dtype equals let the converter import."""
    import torch
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        if not hasattr(torch, name):
            setattr(torch, name, type(name, (), {"__repr__": lambda self, n=name: f"torch.{n} (absent)"})())


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--llama", required=True, help="llama.cpp's source folder")
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.model, "config.json")) as f:
        config = json.load(f)
    with tempfile.TemporaryDirectory(prefix="llama-convert-") as source:
        for name in os.listdir(args.model):
            if not name.startswith("."):
                os.symlink(os.path.abspath(os.path.join(args.model, name)), os.path.join(source, name))
        write_tokenizer(source, config["vocab_size"], {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3})
        sys.path[:0] = [args.llama, os.path.join(args.llama, "gguf-py")]
        shim_missing_torch_dtypes()
        import convert_hf_to_gguf
        from conversion import base
        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "bloom"
        sys.argv = ["convert_hf_to_gguf.py", source, "--outfile", args.out, "--outtype", "f32"]
        convert_hf_to_gguf.main()
    shutil.os.chmod(args.out, 0o644)


if __name__ == "__main__":
    main()
