"""One peer system on one workload, in its own process so that its peak RSS is its own.

usage: bench_peers_workers.py SPEC.json RESULT.json   (written by bench_peers.py)

The prompts are cut, in order, into batches of at most spec["batch"] rows; every batch is decoded
greedily for exactly spec["new_tokens"] tokens (EOS suppressed by min length = max length), and
the generated tokens are counted. Peers decode a batch as one call and stream nothing, so the time
to first token is estimated: a request in batch k waits for batches 0..k-1 to finish and then for
the first step of batch k, measured as a separate 1-token call on the same batch (prefill and, for
seq2seq, the encoder). The per-token time of a batch is (full - first) / (new_tokens - 1).
Model loading is outside every timing.
"""
import json
import os
import resource
import sys
import time


def batches(rows, size):
    return [rows[i:i + size] for i in range(0, len(rows), size)]


class HF:
    """Hugging Face transformers generate (+ PEFT mixed-adapter batches through adapter_names)."""

    def __init__(self, spec):
        sys.path.insert(0, os.path.join(spec["root"], "tests", "oracle"))
        import hf_compat  # noqa: F401  (offline env and the torch.distributed shim generate() needs)
        import torch
        import transformers
        torch.set_num_threads(spec["threads"])
        self.torch = torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_peers_models import CAUSAL, FAMILIES
        model = getattr(transformers, FAMILIES[spec["family"]]["cls"]).from_pretrained(spec["model_dir"],
                                                                                     torch_dtype=torch.float32)
        self.seq2seq = spec["family"] not in CAUSAL
        self.pad = model.config.pad_token_id
        if spec.get("adapters"):
            from peft import PeftModel
            (first, first_dir), rest = spec["adapters"][0], spec["adapters"][1:]
            model = PeftModel.from_pretrained(model, first_dir, adapter_name=first)
            for name, path in rest:
                model.load_adapter(path, adapter_name=name)
        self.model = model.eval()

    def run(self, rows, new_tokens, adapters=None):
        torch = self.torch
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            # Encoders take right padding; a decoder-only model must be left-padded to generate.
            span = slice(0, len(r)) if self.seq2seq else slice(width - len(r), width)
            ids[i, span] = torch.tensor(r)
            mask[i, span] = 1
        kwargs = dict(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                      do_sample=False, num_beams=1, pad_token_id=self.pad)
        if adapters is not None:
            # PEFT 0.13.2's mixed-adapter batches (generate(adapter_names=...)) register forward
            # pre-hooks with with_kwargs=True, which needs torch >= 2.0; on Debian's torch 1.13 the
            # peer therefore decodes one adapter at a time (main() groups the rows by adapter).
            assert len(set(adapters)) == 1, "one adapter per HF batch"
            self.model.set_adapter(adapters[0])
        with torch.inference_mode():
            start = time.perf_counter()
            out = self.model.generate(**kwargs)
            elapsed = time.perf_counter() - start
        # seq2seq output starts with the decoder start token; causal output repeats the prompt.
        generated = out.shape[1] - (1 if self.seq2seq else width)
        return elapsed, generated * len(rows)


class CT2:
    """CTranslate2 Translator (T5, BART) or Generator (BLOOM, Qwen2), same thread count; compute_type
    float32 (system "ct2") or int8 (system "ct2-int8": weights quantized by CTranslate2 at load)."""

    def __init__(self, spec):
        import ctranslate2
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_peers_models import CAUSAL, ct2_vocabulary
        self.vocab = ct2_vocabulary(spec["ct2_dir"])
        self.seq2seq = spec["family"] not in CAUSAL
        cls = ctranslate2.Translator if self.seq2seq else ctranslate2.Generator
        compute_type = "int8" if spec["system"] == "ct2-int8" else "float32"
        self.model = cls(spec["ct2_dir"], device="cpu", compute_type=compute_type,
                         intra_threads=spec["threads"], inter_threads=1)

    def run(self, rows, new_tokens, adapters=None):
        tokens = [[self.vocab[i] for i in r] for r in rows]
        start = time.perf_counter()
        if self.seq2seq:
            results = self.model.translate_batch(tokens, max_batch_size=len(rows), beam_size=1,
                                                 max_decoding_length=new_tokens, min_decoding_length=new_tokens)
            generated = sum(len(r.hypotheses[0]) for r in results)
        else:
            results = self.model.generate_batch(tokens, max_batch_size=len(rows), beam_size=1,
                                                max_length=new_tokens, min_length=new_tokens,
                                                include_prompt_in_result=False)
            generated = sum(len(r.sequences_ids[0]) for r in results)
        return time.perf_counter() - start, generated


def peak_rss_bytes():
    """VmHWM of this address space: ru_maxrss survives execve and would report the harness's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(values, p):
    if not values:
        return 0.0
    v = sorted(values)
    rank = p / 100.0 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def main():
    spec_path, out_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    system = {"hf": HF, "ct2": CT2, "ct2-int8": CT2}[spec["system"]](spec)
    rows, n = spec["prompts"], spec["new_tokens"]
    row_adapters = spec.get("row_adapters")
    if row_adapters:
        # One adapter per batch (see HF.run): each adapter's rows in prompt order, batch by batch.
        order = list(dict.fromkeys(row_adapters))
        chunks = [c for a in order for c in batches([i for i, x in enumerate(row_adapters) if x == a], spec["batch"])]
    else:
        chunks = batches(list(range(len(rows))), spec["batch"])

    def call(idx, tokens):
        names = [row_adapters[i] for i in idx] if row_adapters else None
        return system.run([rows[i] for i in idx], tokens, names)

    call(chunks[0][:2], 2)  # warm-up: first-call allocations and thread pools
    full, generated = [], 0
    for idx in chunks:
        t, g = call(idx, n)
        full.append(t)
        generated += g
    expected = len(rows) * n
    if generated != expected:
        raise SystemExit(f"{spec['system']}: generated {generated} tokens, expected {expected}")
    first = [call(idx, 1)[0] for idx in chunks]
    ttft, per_token = [], []
    done = 0.0
    for idx, t_full, t_first in zip(chunks, full, first):
        ttft += [(done + t_first) * 1e3] * len(idx)
        step = max(t_full - t_first, 0.0) / max(n - 1, 1)
        per_token += [step * 1e3] * len(idx)
        done += t_full
    wall = sum(full)
    result = {
        "system": spec["system"], "requests": len(rows), "generated_tokens": generated, "wall_s": wall,
        "tokens_per_s": generated / wall if wall > 0 else 0.0,
        "ttft_ms": {"p50": percentile(ttft, 50), "p95": percentile(ttft, 95), "estimated": True},
        "per_token_ms": {"p50": percentile(per_token, 50), "p95": percentile(per_token, 95)},
        "batches": [len(c) for c in chunks], "batch_wall_s": full, "batch_first_step_s": first,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
