#!/usr/bin/env python3
"""Differential oracle for safetensors files: what the `safetensors` library decides on a corpus of
corrupt and borderline files.

Writes <out>/safetensors_corpus/:
  <name>.safetensors  the corpus: truncations of a valid file, every kind of bad header length,
                      headers that are not JSON, not an object, not UTF-8 (keys, metadata), lone
                      surrogates, duplicate keys, wrong or unknown dtypes, bad shapes (negative,
                      fractional, overflowing), bad data_offsets (missing, reversed, outside the
                      data, overlapping, leaving gaps, not starting at 0, data left over), bad
                      __metadata__, plus every committed fuzz input of the safetensors target
                      (tests/fuzz/corpus/safetensors);
  corpus.json         per file: "valid" (safe_open(framework="numpy") opened it and read its keys,
                      shapes and dtypes), the library's error otherwise, and the tensors it lists;
                      "loads" (load_file with framework="pt" materialised every tensor: false for a
                      valid file whose dtype Debian's torch 1.13 lacks, e.g. U16).
Nothing here is our reader's opinion: tests/io/test_safetensors_differential.cpp compares ours with it.
"""
import argparse
import json
import os
import struct

import hf_compat  # noqa: F401  (offline env, version record)

import numpy as np
import safetensors
from safetensors import safe_open
from safetensors.numpy import save

HERE = os.path.dirname(os.path.abspath(__file__))
FUZZ_SEEDS = os.path.join(HERE, "..", "fuzz", "corpus", "safetensors")


def file_bytes(header, data=b"", length=None):
    """A safetensors file from header bytes (a str is UTF-8 encoded) and data; `length` overrides the
    8-byte header length field."""
    if isinstance(header, str):
        header = header.encode("utf-8")
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": None if shape is None else list(shape),
            "data_offsets": None if offsets is None else list(offsets)}


def jheader(obj):
    return json.dumps(obj, separators=(",", ":"))


def corpus(extra_dirs=()):
    files = {}
    base = save({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(4, dtype=np.int64),
                 "c": np.zeros((0, 3), np.float16), "d": np.arange(3, dtype=np.uint8)},
                metadata={"format": "pt"})
    files["base"] = base
    header_len = struct.unpack("<Q", base[:8])[0]
    end = 8 + header_len
    for n in sorted({0, 1, 7, 8, 9, 15, end // 2, end - 1, end, end + 1, len(base) - 1}):
        files[f"truncated_{n}"] = base[:n]
    body = base[8:]
    for name, length in {"len_0": 0, "len_1": 1, "len_short": header_len - 1, "len_long": header_len + 1,
                         "len_whole_file": len(base) - 8, "len_past_end": len(base) - 7,
                         "len_limit": 100_000_000, "len_over_limit": 100_000_001, "len_2_63": 2 ** 63,
                         "len_max": 2 ** 64 - 1}.items():
        files[name] = struct.pack("<Q", length) + body

    d8 = b"\x01" * 8
    files["empty_object"] = file_bytes("{}")
    files["empty_object_data_left"] = file_bytes("{}", b"\x00" * 4)
    files["empty_header"] = file_bytes("")
    for name, text in {"array": "[]", "null": "null", "number": "1", "string": '"x"', "leading_space": " {}",
                       "trailing_spaces": "{}    ", "trailing_nul": "{}\x00", "two_objects": "{}{}",
                       "unterminated": '{"a":', "comment": "{/*x*/}"}.items():
        files["header_" + name] = file_bytes(text)
    files["key_not_utf8"] = file_bytes(b'{"\xff":' + jheader(entry()).encode() + b"}", d8)
    files["metadata_not_utf8"] = file_bytes(b'{"__metadata__":{"k":"\xc3\x28"}}')
    files["key_overlong_utf8"] = file_bytes(b'{"\xc0\xafa":' + jheader(entry()).encode() + b"}", d8)
    files["key_lone_surrogate"] = file_bytes('{"\\ud800":' + jheader(entry()) + "}", d8)
    files["key_escaped_pair"] = file_bytes('{"\\ud83d\\ude00":' + jheader(entry()) + "}", d8)
    files["key_utf8"] = file_bytes('{"caf\u00e9.w":' + jheader(entry()) + "}", d8)
    files["key_empty"] = file_bytes('{"":' + jheader(entry()) + "}", d8)
    files["duplicate_key"] = file_bytes('{"w":' + jheader(entry()) + ',"w":' + jheader(entry()) + "}", d8)

    for dtype, size in {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                        "BOOL": 1, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}.items():
        files["dtype_" + dtype] = file_bytes(jheader({"w": entry(dtype, (2,), (0, 2 * size))}), b"\x00" * (2 * size))
    for name, dtype in {"lower": "f32", "unknown": "F7", "empty": "", "number": 5, "null": None}.items():
        files["dtype_bad_" + name] = file_bytes(jheader({"w": entry(dtype)}), d8)
    files["dtype_missing"] = file_bytes(jheader({"w": {"shape": [2], "data_offsets": [0, 8]}}), d8)

    for name, shape, data in [("scalar", [], 4), ("zero", [0], 0), ("zero_by_big", [0, 2 ** 40], 0),
                              ("negative", [-1], 4), ("fraction", [1.5], 4), ("string", ["2"], 8),
                              ("null", None, 8), ("nested", [[2]], 8), ("2_64", [2 ** 64], 8),
                              ("overflow", [2 ** 62, 8], 0), ("big_product", [2 ** 31, 2 ** 31], 0)]:
        files["shape_" + name] = file_bytes(jheader({"w": {"dtype": "F32", "shape": shape,
                                                           "data_offsets": [0, data]}}), b"\x00" * data)
    files["shape_missing"] = file_bytes(jheader({"w": {"dtype": "F32", "data_offsets": [0, 8]}}), d8)

    for name, offsets in {"one": [0], "three": [0, 8, 8], "reversed": [8, 0], "negative": [-8, 0],
                          "fraction": [0, 8.0], "string": ["0", "8"], "past_end": [8, 16], "null": None}.items():
        files["offsets_" + name] = file_bytes(jheader({"w": entry("F32", (2,), offsets)}), d8)
    files["offsets_missing"] = file_bytes(jheader({"w": {"dtype": "F32", "shape": [2]}}), d8)
    two = lambda a, b: {"x": entry("F32", (2,), a), "y": entry("F32", (2,), b)}  # noqa: E731
    files["two_contiguous"] = file_bytes(jheader(two((0, 8), (8, 16))), b"\x00" * 16)
    files["two_header_order_reversed"] = file_bytes(jheader(two((8, 16), (0, 8))), b"\x00" * 16)
    files["two_overlap"] = file_bytes(jheader(two((0, 8), (4, 12))), b"\x00" * 16)
    files["two_same_bytes"] = file_bytes(jheader(two((0, 8), (0, 8))), b"\x00" * 8)
    files["two_gap"] = file_bytes(jheader(two((0, 8), (12, 20))), b"\x00" * 20)
    files["not_from_zero"] = file_bytes(jheader({"w": entry("F32", (2,), (4, 12))}), b"\x00" * 12)
    files["data_left_over"] = file_bytes(jheader({"w": entry()}), b"\x00" * 12)
    files["empty_tensor_between"] = file_bytes(jheader({"x": entry("F32", (2,), (0, 8)), "e": entry("F32", (0,), (8, 8)),
                                                        "y": entry("F32", (2,), (8, 16))}), b"\x00" * 16)
    files["empty_tensor_past_end"] = file_bytes(jheader({"x": entry("F32", (2,), (0, 8)), "e": entry("F32", (0,), (12, 12))}),
                                                b"\x00" * 8)
    files["entry_number"] = file_bytes(jheader({"w": 1}), d8)
    files["entry_array"] = file_bytes(jheader({"w": [1]}), d8)
    files["entry_extra_field"] = file_bytes(jheader({"w": dict(entry(), extra=1)}), d8)

    for name, meta in {"ok": {"a": "b"}, "number": {"a": 1}, "null_value": {"a": None}, "array": [], "null": None,
                       "string": "x", "nested": {"a": {"b": "c"}}, "empty": {}}.items():
        files["metadata_" + name] = file_bytes(jheader({"__metadata__": meta}))
    files["metadata_with_tensor"] = file_bytes(jheader({"__metadata__": {"format": "pt"}, "w": entry()}), d8)

    for prefix, d in [("fuzz_", FUZZ_SEEDS)] + [(f"extra{i}_", d) for i, d in enumerate(extra_dirs)]:
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                with open(os.path.join(d, name), "rb") as f:
                    files[prefix + name] = f.read()
    return files


def library_decision(path):
    rec = {}
    try:
        with safe_open(path, framework="numpy") as f:
            tensors = {}
            for k in f.keys():
                s = f.get_slice(k)
                tensors[k] = {"dtype": s.get_dtype(), "shape": list(s.get_shape())}
            rec["metadata"] = f.metadata() or {}
        rec["valid"] = True
        rec["tensors"] = tensors
    except Exception as e:  # noqa: BLE001 - the library's refusal, whatever its type
        rec["valid"] = False
        rec["error"] = f"{type(e).__name__}: {e}"
    try:
        from safetensors.torch import load_file
        load_file(path)
        rec["loads"] = True
    except Exception as e:  # noqa: BLE001
        rec["loads"] = False
        rec.setdefault("load_error", f"{type(e).__name__}: {e}")
    return rec


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--extra", action="append", default=[],
                        help="more files to decide, e.g. a fuzzing run's corpus (build/fuzz/corpus/safetensors)")
    args = parser.parse_args()
    out = os.path.join(args.out, "safetensors_corpus")
    os.makedirs(out, exist_ok=True)
    records = {}
    for name, data in corpus(args.extra).items():
        path = os.path.join(out, name + ".safetensors")
        with open(path, "wb") as f:
            f.write(data)
        records[name] = dict(library_decision(path), file=path)
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump({"safetensors_version": safetensors.__version__, "versions": hf_compat.versions(),
                   "files": records}, f, indent=1, sort_keys=True)
    valid = sum(r["valid"] for r in records.values())
    print(f"{len(records)} files, {valid} valid per safetensors {safetensors.__version__}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
