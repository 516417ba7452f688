"""Oracle step `oracle_sampling`: Hugging Face's own logits processors on random scores.

For many parameter combinations this builds random scores and random token histories with a fixed
seed, composes HF's processors exactly as GenerationMixin._get_logits_processor does for the merged
GenerationConfig (the model's generation_config updated with the request's parameters, lengths
prepared by _prepare_generated_length), and records inputs and outputs. It also records seeded
sampling runs (torch.manual_seed, then per step processors -> softmax -> multinomial, as
GenerationMixin._sample does) so the C++ chooser can be held to HF's draws.

Layout under --out/sampling:
  records.json  cases (params, generation_config, histories, HF's resolved lengths, argmax) and
                sampling runs, with offsets into scores.bin
  scores.bin    little-endian float32 arrays (inputs and HF's processed scores, row-major)

Beam searches run HF's BeamSearchScorer and processors in the loop of GenerationMixin._beam_search
over a toy "model" whose logits are a table lookup (last token, position), so the C++ side can
recompute the same logits and must end with HF's sequence and score.
"""
import argparse
import copy
import json
import os
import warnings

import hf_compat  # noqa: F401  (before anything touches generate())
import torch
from transformers import GenerationConfig
from transformers.utils import logging as hf_logging
from transformers.generation.beam_search import BeamSearchScorer
from transformers.generation.logits_process import LogitsProcessorList
from transformers.generation.utils import GenerationMixin

# Request parameters that are ours only (HF's generate has no such keyword).
NOT_HF = {"stop", "seed", "ignore_eos", "logprobs"}


class _Composer:
    """Just enough of a model for GenerationMixin's processor-building methods."""

    _merge_criteria_processor_list = GenerationMixin._merge_criteria_processor_list
    config = None


def hf_processors(model_gc, params, input_len):
    """The merged GenerationConfig and the processor list HF would use for a batch whose
    input_ids are input_len long when generation starts."""
    gc = GenerationConfig(**model_gc)
    gc = copy.deepcopy(gc)
    kwargs = {k: v for k, v in params.items() if k not in NOT_HF}
    gc.update(**kwargs)
    has_default_max_length = "max_new_tokens" not in kwargs and gc.max_length == GenerationConfig().max_length \
        and "max_length" not in model_gc
    has_default_min_length = "min_new_tokens" not in kwargs and "min_length" not in model_gc
    # generate() turns the public config into this, as _prepare_special_tokens does for eos.
    eos = gc.eos_token_id
    if eos is not None:
        eos = [eos] if isinstance(eos, int) else list(eos)
        gc._eos_token_tensor = torch.tensor(eos, dtype=torch.long)
    else:
        gc._eos_token_tensor = None
    composer = _Composer()
    gc = GenerationMixin._prepare_generated_length(
        composer, gc, has_default_max_length, has_default_min_length, "input_ids", input_len, None)
    processors = GenerationMixin._get_logits_processor(
        composer, gc, input_len, None, None, LogitsProcessorList(), device="cpu")
    return gc, processors


class Blob:
    def __init__(self):
        self.parts = []
        self.offset = 0

    def add(self, tensor):
        data = tensor.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        start = self.offset
        self.parts.append(data)
        self.offset += len(data) // 4
        return start  # in floats


def random_scores(gen, rows, vocab, scale=3.0):
    scores = torch.randn(rows, vocab, generator=gen) * scale
    return scores


def history(gen, rows, length, alphabet):
    return torch.randint(0, alphabet, (rows, length), generator=gen)


def cases():
    """(name, model generation_config, request params, rows, vocab, input_len, cur_len, alphabet)."""
    eos = {"eos_token_id": 2}
    out = []
    V = 512
    out.append(("greedy_defaults", eos, {}, 3, V, 6, 9, V))
    out.append(("rep_penalty_1_3", eos, {"repetition_penalty": 1.3}, 4, V, 7, 12, 40))
    out.append(("rep_penalty_0_7", eos, {"repetition_penalty": 0.7}, 3, V, 5, 8, 40))
    out.append(("rep_penalty_encdec", {"eos_token_id": 1, "decoder_start_token_id": 0},
                {"repetition_penalty": 1.5}, 3, V, 1, 6, 30))
    out.append(("no_repeat_2", eos, {"no_repeat_ngram_size": 2}, 4, V, 5, 20, 6))
    out.append(("no_repeat_3", eos, {"no_repeat_ngram_size": 3}, 4, V, 8, 30, 4))
    out.append(("no_repeat_1", eos, {"no_repeat_ngram_size": 1}, 2, V, 3, 7, 50))
    out.append(("no_repeat_too_short", eos, {"no_repeat_ngram_size": 6}, 2, V, 3, 4, 3))
    out.append(("min_new_tokens_active", eos, {"min_new_tokens": 4}, 3, V, 5, 7, V))
    out.append(("min_new_tokens_done", eos, {"min_new_tokens": 2}, 3, V, 5, 7, V))
    out.append(("min_length_config", {"eos_token_id": [2, 7], "min_length": 12}, {}, 3, V, 5, 9, V))
    out.append(("min_length_config_done", {"eos_token_id": [2, 7], "min_length": 12}, {}, 3, V, 5, 12, V))
    out.append(("forced_bos_first_step", {"eos_token_id": 2, "forced_bos_token_id": 0}, {}, 2, V, 1, 1, V))
    out.append(("forced_bos_later", {"eos_token_id": 2, "forced_bos_token_id": 0}, {}, 2, V, 1, 2, V))
    out.append(("forced_eos_max_new", {"eos_token_id": 2, "forced_eos_token_id": 2},
                {"max_new_tokens": 5}, 2, V, 4, 8, V))
    out.append(("forced_eos_max_length", {"eos_token_id": 2, "forced_eos_token_id": 2, "max_length": 12},
                {}, 2, V, 5, 11, V))
    out.append(("forced_eos_not_yet", {"eos_token_id": 2, "forced_eos_token_id": 2},
                {"max_new_tokens": 5}, 2, V, 4, 6, V))
    out.append(("greedy_ignores_warpers", eos, {"temperature": 0.5, "top_k": 3, "top_p": 0.5}, 3, V, 4, 6, V))
    out.append(("sample_default_top_k", eos, {"do_sample": True}, 3, V, 4, 6, V))
    out.append(("sample_temperature", eos, {"do_sample": True, "temperature": 0.7, "top_k": 0}, 3, V, 4, 6, V))
    out.append(("sample_top_k_10", eos, {"do_sample": True, "top_k": 10}, 3, V, 4, 6, V))
    out.append(("sample_top_p_0_9", eos, {"do_sample": True, "top_k": 0, "top_p": 0.9}, 4, V, 4, 6, V))
    out.append(("sample_top_p_small", eos, {"do_sample": True, "top_k": 0, "top_p": 0.05}, 3, V, 4, 6, V))
    out.append(("sample_min_p", eos, {"do_sample": True, "top_k": 0, "min_p": 0.1}, 3, V, 4, 6, V))
    out.append(("sample_typical", eos, {"do_sample": True, "top_k": 0, "typical_p": 0.8}, 3, V, 4, 6, V))
    out.append(("sample_everything", eos,
                {"do_sample": True, "temperature": 1.3, "top_k": 40, "top_p": 0.8, "min_p": 0.05,
                 "typical_p": 0.9, "repetition_penalty": 1.2, "no_repeat_ngram_size": 2,
                 "min_new_tokens": 5}, 4, V, 6, 9, 20))
    out.append(("sample_config_defaults", {"eos_token_id": 2, "do_sample": True, "temperature": 0.6,
                                           "top_p": 0.7, "top_k": 20}, {"top_k": 100}, 3, V, 4, 6, V))
    out.append(("beam_sample_keep", {"eos_token_id": [2, 3]},
                {"do_sample": True, "num_beams": 2, "top_k": 1, "top_p": 0.01, "min_p": 0.9,
                 "typical_p": 0.05}, 4, V, 4, 6, V))
    out.append(("beam_processors", eos,
                {"num_beams": 4, "length_penalty": 2.0, "no_repeat_ngram_size": 3, "early_stopping": True,
                 "repetition_penalty": 1.1}, 4, V, 1, 12, 5))
    big = 250880
    out.append(("bloom_vocab_sample", eos,
                {"do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.2},
                2, big, 10, 14, big))
    out.append(("bloom_vocab_greedy_penalty", eos, {"repetition_penalty": 1.2, "no_repeat_ngram_size": 2},
                2, big, 10, 14, 50))
    return out


def sampling_runs():
    """(name, model generation_config, params, vocab, prompt, steps)."""
    eos = {"eos_token_id": 2}
    return [
        ("plain_sampling", eos, {"do_sample": True, "top_k": 0, "seed": 11}, 300, [5, 9, 14], 12),
        ("warped_sampling", eos, {"do_sample": True, "temperature": 0.9, "top_k": 30, "top_p": 0.9,
                                  "repetition_penalty": 1.3, "seed": 1234}, 300, [7, 7, 8, 1], 12),
        ("typical_min_p_sampling", eos, {"do_sample": True, "typical_p": 0.7, "min_p": 0.02,
                                         "no_repeat_ngram_size": 2, "seed": 99}, 400, [3], 12),
    ]


def beam_searches():
    """(name, model generation_config, params, prompt)."""
    eos = {"eos_token_id": 2, "pad_token_id": 0}
    paper = {"num_beams": 4, "length_penalty": 2.0, "no_repeat_ngram_size": 3, "early_stopping": True}
    return [
        ("paper_settings_decoder_only", eos, dict(paper, max_new_tokens=12), [5, 6, 7]),
        ("paper_settings_encoder_decoder", eos, dict(paper, max_new_tokens=10), [0]),
        ("heuristic_stop", eos, {"num_beams": 3, "length_penalty": 1.0, "early_stopping": False,
                                 "repetition_penalty": 1.2, "max_new_tokens": 15}, [9, 4]),
        ("never_positive_penalty", eos, {"num_beams": 4, "length_penalty": 0.5, "early_stopping": "never",
                                         "max_new_tokens": 12}, [1]),
        ("never_negative_penalty", eos, {"num_beams": 2, "length_penalty": -1.0, "early_stopping": "never",
                                         "max_new_tokens": 9}, [3, 3]),
        ("two_eos_ids", {"eos_token_id": [2, 3], "pad_token_id": 0},
         {"num_beams": 3, "length_penalty": 1.0, "min_new_tokens": 2, "max_new_tokens": 10}, [8]),
        ("config_max_length", {"eos_token_id": 2, "pad_token_id": 0, "max_length": 9, "num_beams": 3}, {}, [0]),
        ("beam_sample", eos, {"num_beams": 3, "do_sample": True, "temperature": 0.8, "top_k": 10,
                              "early_stopping": True, "max_new_tokens": 10, "seed": 7}, [4, 5]),
    ]


def toy_logits(tables, ids):
    last, position = tables
    return last[ids[:, -1]] + position[ids.shape[1]]


def run_beam_search(model_gc, params, prompt, tables):
    """GenerationMixin._beam_search's loop, batch of one, with HF's scorer and processors."""
    gc, processors = hf_processors(model_gc, params, len(prompt))
    num_beams = gc.num_beams
    eos = gc._eos_token_tensor
    scorer = BeamSearchScorer(batch_size=1, num_beams=num_beams, device="cpu",
                              length_penalty=gc.length_penalty, do_early_stopping=gc.early_stopping,
                              num_beam_hyps_to_keep=1, max_length=gc.max_length)
    input_ids = torch.tensor([prompt] * num_beams, dtype=torch.long)
    beam_scores = torch.zeros((1, num_beams), dtype=torch.float)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    if gc.do_sample:
        torch.manual_seed(params["seed"])
    while True:
        logits = toy_logits(tables, input_ids)
        scores = torch.nn.functional.log_softmax(logits, dim=-1)
        processed = processors(input_ids, scores)
        next_scores = processed + beam_scores[:, None].expand_as(processed)
        vocab = next_scores.shape[-1]
        next_scores = next_scores.view(1, num_beams * vocab)
        keep = max(2, 1 + eos.shape[0]) * num_beams
        if gc.do_sample:
            probs = torch.nn.functional.softmax(next_scores, dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=keep)
            next_scores = torch.gather(next_scores, -1, next_tokens)
            next_scores, order = torch.sort(next_scores, descending=True, dim=1)
            next_tokens = torch.gather(next_tokens, -1, order)
        else:
            next_scores, next_tokens = torch.topk(next_scores, keep, dim=1, largest=True, sorted=True)
        next_indices = torch.div(next_tokens, vocab, rounding_mode="floor")
        next_tokens = next_tokens % vocab
        out = scorer.process(input_ids, next_scores, next_tokens, next_indices, pad_token_id=gc.pad_token_id,
                             eos_token_id=eos, decoder_prompt_len=len(prompt))
        beam_scores = out["next_beam_scores"]
        input_ids = torch.cat([input_ids[out["next_beam_indices"], :], out["next_beam_tokens"].unsqueeze(-1)], dim=-1)
        if scorer.is_done or input_ids.shape[-1] >= gc.max_length:
            break
    final = scorer.finalize(input_ids, beam_scores, None, None, max_length=gc.max_length,
                            pad_token_id=gc.pad_token_id, eos_token_id=eos, decoder_prompt_len=len(prompt))
    return final["sequences"][0].tolist(), float(final["sequence_scores"][0]), input_ids.shape[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out_dir = os.path.join(args.out, "sampling")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    # HF warns about flags that only matter when sampling and about min/max precedence: the
    # combinations are deliberate here.
    hf_logging.set_verbosity_error()
    warnings.simplefilter("ignore", UserWarning)

    gen = torch.Generator().manual_seed(20241129)
    blob = Blob()
    records = {"versions": hf_compat.versions(), "cases": [], "sampling_runs": [], "beam_searches": []}

    for name, model_gc, params, rows, vocab, input_len, cur_len, alphabet in cases():
        ids = history(gen, rows, cur_len, alphabet)
        scores = random_scores(gen, rows, vocab)
        if name.startswith("beam"):
            # HF's beam search runs the processors on log-probabilities.
            scores = torch.log_softmax(scores, dim=-1)
        gc, processors = hf_processors(model_gc, params, input_len)
        processed = processors(ids, scores.clone())
        records["cases"].append({
            "name": name,
            "generation_config": model_gc,
            "params": params,
            "rows": rows,
            "vocab": vocab,
            "input_ids_length": input_len,
            "input_ids": ids.tolist(),
            "scores_offset": blob.add(scores),
            "processed_offset": blob.add(processed),
            "argmax": processed.argmax(dim=-1).tolist(),
            "processors": [type(p).__name__ for p in processors],
            "hf_max_length": gc.max_length,
            "hf_min_length": gc.min_length,
        })

    for name, model_gc, params, vocab, prompt, steps in sampling_runs():
        gc, processors = hf_processors(model_gc, params, len(prompt))
        logits = random_scores(gen, steps, vocab)
        torch.manual_seed(params["seed"])
        ids = torch.tensor([prompt], dtype=torch.long)
        tokens = []
        for step in range(steps):
            scores = processors(ids, logits[step:step + 1].clone())
            probs = torch.nn.functional.softmax(scores, dim=-1)
            token = torch.multinomial(probs, num_samples=1).squeeze(1)
            tokens.append(int(token[0]))
            ids = torch.cat([ids, token[:, None]], dim=-1)
        records["sampling_runs"].append({
            "name": name, "generation_config": model_gc, "params": params, "vocab": vocab,
            "prompt": prompt, "steps": steps, "logits_offset": blob.add(logits), "tokens": tokens,
        })

    vocab, positions = 40, 64
    last = torch.randn(vocab, vocab, generator=gen) * 2.5
    last[:, 2] += 1.0  # eos often competitive, so hypotheses close at different lengths
    last[:, 3] += 0.5
    position = torch.randn(positions, vocab, generator=gen) * 0.5
    records["beam_tables"] = {"vocab": vocab, "positions": positions, "last_offset": blob.add(last),
                              "position_offset": blob.add(position)}
    for name, model_gc, params, prompt in beam_searches():
        sequence, score, final_length = run_beam_search(model_gc, params, prompt, (last, position))
        records["beam_searches"].append({"name": name, "generation_config": model_gc, "params": params,
                                         "prompt": prompt, "sequence": sequence, "score": score,
                                         "final_length": final_length})

    with open(os.path.join(out_dir, "scores.bin"), "wb") as f:
        for part in blob.parts:
            f.write(part)
    with open(os.path.join(out_dir, "records.json"), "w") as f:
        json.dump(records, f)
    print(f"sampling oracle: {len(records['cases'])} cases, {len(records['sampling_runs'])} sampling runs "
          f"{len(records['beam_searches'])} beam searches -> {out_dir}")


if __name__ == "__main__":
    main()
