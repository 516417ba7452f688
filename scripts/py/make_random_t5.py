"""Build a small random T5 checkpoint with its own SentencePiece tokenizer (fixed seeds).

Used by the headless demo until the trained demo pack exists: nothing is downloaded, and nothing
from ../shared/ is copied. Usage: make_random_t5.py --out DIR
"""
import argparse
import io
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "oracle"))
import hf_compat  # noqa: E402,F401

import sentencepiece as spm  # noqa: E402
import torch  # noqa: E402
from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer  # noqa: E402

TEXT = """The quick brown fox jumps over the lazy dog.
Lorascope batches many prompts and decodes them together.
Adapters change what a model says; the base model stays the same.
One two three four five six seven eight nine ten.
Translate English to German: the house is wonderful.
Summarize: continuous batching admits new requests at every step.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    model_proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT.splitlines() * 20), model_writer=model_proto,
        vocab_size=96, model_type="unigram", hard_vocab_limit=False, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        character_coverage=1.0, num_threads=1, seed_sentencepiece_size=10000,
        minloglevel=2)
    with open(os.path.join(args.out, "spiece.model"), "wb") as f:
        f.write(model_proto.getvalue())
    tok = T5Tokenizer(os.path.join(args.out, "spiece.model"), extra_ids=8, legacy=False)
    tok.save_pretrained(args.out)

    torch.manual_seed(1234)
    config = T5Config(vocab_size=len(tok), d_model=64, d_kv=16, d_ff=128, num_layers=2,
                      num_heads=4, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config).eval()
    model.save_pretrained(args.out, safe_serialization=True)
    with open(os.path.join(args.out, "lorascope-demo.json"), "w") as f:
        json.dump({"what": "random T5 for the headless demo", "seed": 1234,
                   "versions": hf_compat.versions()}, f, indent=2)
    print(args.out)


if __name__ == "__main__":
    main()
