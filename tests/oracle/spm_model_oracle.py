#!/usr/bin/env python3
"""spiece.model oracle: what SentencePiece itself reads from its model files.

Writes <out>/spm_model/:
  <name>.model   small models trained here with sentencepiece.SentencePieceTrainer (single thread,
                 no shuffling: deterministic), covering Unigram with the default nmt_nfkc charsmap and
                 non-default special ids, Unigram with byte fallback and identity normalization, BPE,
                 and a tiny Unigram model for the negative suite;
  <name>.json    every piece, score and type, the TrainerSpec and NormalizerSpec fields our reader
                 exposes (proto defaults where the file leaves them out), the denormalizer spec, and
                 SentencePieceProcessor's piece count and unk id. Also for the real T5 spiece.model in
                 LORASCOPE_SHARED_TOKENIZERS when that folder exists (read in place, never copied);
  tiny_prefixes.json  for every prefix length of tiny.model: whether protobuf parses it and whether
                 SentencePiece loads it (and with how many pieces);
  tiny_mutations.json the same for single-byte XOR mutations of tiny.model at every offset.
"""
import argparse
import base64
import json
import os
import sys

import hf_compat  # noqa: F401  (offline env, version record)

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "tokenizer_corpus.json")

TRAINER_FIELDS = ["model_type", "vocab_size", "unk_id", "bos_id", "eos_id", "pad_id", "unk_piece", "bos_piece",
                  "eos_piece", "pad_piece", "unk_surface", "byte_fallback", "treat_whitespace_as_suffix",
                  "allow_whitespace_only_pieces", "split_digits"]
TRAINER_LISTS = ["control_symbols", "user_defined_symbols"]
NORMALIZER_FIELDS = ["name", "add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces",
                     "normalization_rule_tsv"]
MUTATION_MASKS = [0x01, 0x80, 0xFF]

COMMON = dict(num_threads=1, shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2)
MODELS = {
    # Special ids moved around (bos disabled: -1 is a ten-byte varint on the wire), user-defined and
    # control symbols, the default nmt_nfkc charsmap.
    "unigram_nfkc": dict(model_type="unigram", vocab_size=1200, hard_vocab_limit=False, character_coverage=0.9995,
                         unk_id=2, bos_id=-1, eos_id=1, pad_id=0, unk_piece="[UNK]", eos_piece="[EOS]", pad_piece="[PAD]",
                         user_defined_symbols=["<sep>", "<cls>"], control_symbols=["<ctrl>"]),
    # Byte fallback (256 byte pieces), identity normalization, non-default normalizer and trainer flags.
    "unigram_bytes": dict(model_type="unigram", vocab_size=1200, hard_vocab_limit=False, byte_fallback=True,
                          character_coverage=0.98, normalization_rule_name="identity", add_dummy_prefix=False,
                          remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
                          treat_whitespace_as_suffix=True),
    "bpe": dict(model_type="bpe", vocab_size=1200, hard_vocab_limit=False, character_coverage=0.9995,
                normalization_rule_name="identity"),
    # Small enough that the negative suite can try every prefix and mutation.
    "tiny": dict(model_type="unigram", vocab_size=40, hard_vocab_limit=False, normalization_rule_name="identity",
                 character_coverage=1.0),
}


def letter_lines(corpus):
    """The ASCII text of the corpus reduced to lower-case letters and spaces: few required characters."""
    lines = ["".join(c for c in t.lower() if "a" <= c <= "z" or c == " ") for t in corpus
             if all(32 <= ord(c) < 127 for c in t)]
    return [" ".join(line.split()) for line in lines if line.strip()]


def describe(proto_bytes, path):
    m = pb.ModelProto.FromString(proto_bytes)
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(proto_bytes)
    assert sp.get_piece_size() == len(m.pieces)
    out = {
        "path": path,
        "pieces": [[p.piece, p.score, p.type] for p in m.pieces],
        "unk_id": sp.unk_id(),
        "piece_size": sp.get_piece_size(),
        "has_trainer_spec": m.HasField("trainer_spec"),
        "has_normalizer_spec": m.HasField("normalizer_spec"),
        "trainer": {f: getattr(m.trainer_spec, f) for f in TRAINER_FIELDS},
        "normalizer": normalizer(m.normalizer_spec),
        "denormalizer": normalizer(m.denormalizer_spec) if m.HasField("denormalizer_spec") else None,
        "versions": dict(hf_compat.versions(), sentencepiece=spm.__version__),
    }
    for f in TRAINER_LISTS:
        out["trainer"][f] = list(getattr(m.trainer_spec, f))
    # SentencePiece's own view must agree with the proto's (scores are float32 in both).
    for i in range(0, len(m.pieces), max(1, len(m.pieces) // 50)):
        assert sp.id_to_piece(i) == m.pieces[i].piece and sp.get_score(i) == m.pieces[i].score
    return out


def normalizer(spec):
    out = {f: getattr(spec, f) for f in NORMALIZER_FIELDS}
    out["precompiled_charsmap_b64"] = base64.b64encode(spec.precompiled_charsmap).decode("ascii")
    return out


def outcome(data):
    """(protobuf parses, SentencePiece loads, its piece count or -1)."""
    try:
        pb.ModelProto.FromString(data)
        proto_ok = True
    except Exception:  # DecodeError and friends
        proto_ok = False
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(data)
        return proto_ok, True, sp.get_piece_size()
    except Exception:
        return proto_ok, False, -1


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = os.path.join(args.out, "spm_model")
    os.makedirs(out, exist_ok=True)
    with open(CORPUS, encoding="utf-8") as f:
        corpus = [t for t in json.load(f) if t.strip() and len(t) < 4000]

    for name, options in MODELS.items():
        lines = letter_lines(corpus) if name == "tiny" else corpus
        text_path = os.path.join(out, name + ".txt")
        with open(text_path, "w", encoding="utf-8") as f:
            f.write("\n".join(line.replace("\n", " ") for line in lines) + "\n")
        prefix = os.path.join(out, name)
        spm.SentencePieceTrainer.train(input=text_path, model_prefix=prefix, **COMMON, **options)
        os.remove(text_path)
        os.remove(prefix + ".vocab")
        with open(prefix + ".model", "rb") as f:
            data = f.read()
        write_json(prefix + ".json", describe(data, prefix + ".model"))
        print(f"{name}: {len(data)} bytes, {len(pb.ModelProto.FromString(data).pieces)} pieces")

    with open(os.path.join(out, "tiny.model"), "rb") as f:
        tiny = f.read()
    prefixes = [outcome(tiny[:n]) for n in range(len(tiny))]
    write_json(os.path.join(out, "tiny_prefixes.json"),
               {"size": len(tiny), "proto_ok": [p[0] for p in prefixes], "spm_ok": [p[1] for p in prefixes],
                "piece_size": [p[2] for p in prefixes]})
    mutations = []
    for offset in range(len(tiny)):
        for mask in MUTATION_MASKS:
            data = bytearray(tiny)
            data[offset] ^= mask
            proto_ok, spm_ok, size = outcome(bytes(data))
            mutations.append([offset, mask, proto_ok, spm_ok, size])
    write_json(os.path.join(out, "tiny_mutations.json"), {"size": len(tiny), "mutations": mutations})
    print(f"tiny: {len(prefixes)} prefixes ({sum(p[1] for p in prefixes)} load), {len(mutations)} mutations "
          f"({sum(m[3] for m in mutations)} load)")

    shared = os.path.abspath(os.environ.get("LORASCOPE_SHARED_TOKENIZERS",
                                            os.path.join(HERE, "..", "..", "..", "shared", "tokenizers")))
    t5 = os.path.join(shared, "t5", "spiece.model")
    if not os.path.isfile(t5):
        print(f"{t5} is absent: only the trained models are recorded")
        return 0
    with open(t5, "rb") as f:
        write_json(os.path.join(out, "t5.json"), describe(f.read(), t5))
    print(f"t5: {t5} recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
