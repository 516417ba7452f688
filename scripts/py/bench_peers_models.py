"""Workload models for scripts/bench-peers: random checkpoints of real shapes, PEFT adapters, a
vocabulary-sized tokenizer for CTranslate2's converter, the converted CTranslate2 models, and the
seeded prompts. Everything is built from configs with fixed seeds and cached under the work dir;
a `.complete` stamp marks a finished build so that an interrupted one is redone, not reused.
"""
import json
import os
import random
import shutil

FAMILIES = {
    # t5-small's config.json (relu feed-forward, tied head, 6+6 layers, 8 heads).
    "t5": dict(cls="T5ForConditionalGeneration", config="T5Config", specials={"pad": 0, "eos": 1, "unk": 2},
               kwargs=dict(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                           num_heads=8, feed_forward_proj="relu", tie_word_embeddings=True,
                           decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)),
    # bart-base's config.json; forced bos/eos are off so that every system decodes the same free run.
    "bart": dict(cls="BartForConditionalGeneration", config="BartConfig",
                 specials={"bos": 0, "pad": 1, "eos": 2, "unk": 3},
                 kwargs=dict(vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6,
                             encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072,
                             decoder_ffn_dim=3072, max_position_embeddings=1024, activation_function="gelu",
                             bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2,
                             forced_bos_token_id=None, forced_eos_token_id=None, scale_embedding=False,
                             # bart-base.json carries these fairseq flags; CTranslate2 reads them.
                             normalize_before=False, add_final_layer_norm=False, normalize_embedding=True)),
    # BLOOM with the real 250880-token vocabulary, 8 layers of width 1024, 16 heads.
    "bloom": dict(cls="BloomForCausalLM", config="BloomConfig", specials={"unk": 0, "bos": 1, "eos": 2, "pad": 3},
                  kwargs=dict(vocab_size=250880, hidden_size=1024, n_layer=8, n_head=16,
                              unk_token_id=0, bos_token_id=1, eos_token_id=2, pad_token_id=3)),
    # Qwen2.5-0.5B's config.json (24 layers, width 896, 14 query / 2 key-value heads, SwiGLU 4864,
    # tied head); the special ids sit above the prompts' id range (the real file has no unk).
    "qwen2": dict(cls="Qwen2ForCausalLM", config="Qwen2Config",
                  specials={"bos": 151643, "unk": 151644, "eos": 151645, "pad": 151646},
                  kwargs=dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                              num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                              rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                              use_sliding_window=False, bos_token_id=151643, eos_token_id=151645,
                              pad_token_id=151646)),
}
CAUSAL = ("bloom", "qwen2")
ADAPTER_RANKS = [8, 16, 24, 32, 40, 48, 56, 64]
T5_LORA_TARGETS = ["q", "k", "v", "o"]
PROMPT_MIN_ID = 4   # above every family's special ids
PROMPT_MAX_ID = 32128  # below every family's vocabulary size, so one prompt set serves all models


def _done(path):
    return os.path.exists(os.path.join(path, ".complete"))


def _mark(path):
    with open(os.path.join(path, ".complete"), "w") as f:
        f.write("ok\n")


def build_model(family, path):
    """The Hugging Face checkpoint directory (config.json + model.safetensors, no tokenizer)."""
    if _done(path):
        return path
    import torch
    import transformers
    shutil.rmtree(path, ignore_errors=True)
    spec = FAMILIES[family]
    config = getattr(transformers, spec["config"])(**spec["kwargs"])
    torch.manual_seed(0)
    model = getattr(transformers, spec["cls"])(config).eval()
    model.save_pretrained(path, safe_serialization=True)
    _mark(path)
    return path


def build_adapters(base_dir, root):
    """Eight PEFT LoRA adapters on the T5 model, ranks 8..64, random non-zero A and B."""
    out = []
    for i, r in enumerate(ADAPTER_RANKS):
        path = os.path.join(root, f"r{r}")
        out.append((f"r{r}", path))
        if _done(path):
            continue
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import T5ForConditionalGeneration
        shutil.rmtree(path, ignore_errors=True)
        base = T5ForConditionalGeneration.from_pretrained(base_dir, torch_dtype=torch.float32)
        model = get_peft_model(base, LoraConfig(task_type="SEQ_2_SEQ_LM", r=r, lora_alpha=2 * r,
                                                target_modules=T5_LORA_TARGETS, init_lora_weights=False))
        g = torch.Generator().manual_seed(100 + i)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        model.save_pretrained(path, safe_serialization=True)
        _mark(path)
    return out


def _write_vocab_tokenizer(family, path):
    """A word-level tokenizer with exactly vocab_size entries and the family's special ids.

    CTranslate2's converter reads the vocabulary through AutoTokenizer; the benchmark feeds token
    strings that map one-to-one onto the same ids the other systems get, so no real vocabulary is
    needed, only its size."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    spec = FAMILIES[family]
    names = {k: f"<{k}>" if k != "eos" or family != "t5" else "</s>" for k in spec["specials"]}
    vocab = {f"t{i}": i for i in range(spec["kwargs"]["vocab_size"])}
    for kind, i in spec["specials"].items():
        del vocab[f"t{i}"]
        vocab[names[kind]] = i
    tok = Tokenizer(models.WordLevel(vocab, unk_token=names["unk"]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **{f"{k}_token": v for k, v in names.items()})
    fast.save_pretrained(path)


def build_ct2(family, model_dir, path):
    """CTranslate2's fp32 conversion of the same checkpoint, plus its id -> token list."""
    if _done(path):
        return path
    import ctranslate2
    shutil.rmtree(path, ignore_errors=True)
    source = path + ".source"
    shutil.rmtree(source, ignore_errors=True)
    os.makedirs(source)
    for name in os.listdir(model_dir):
        if not name.startswith("."):
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), os.path.join(source, name))
    _write_vocab_tokenizer(family, source)
    ctranslate2.converters.TransformersConverter(source).convert(path, quantization="float32", force=True)
    shutil.rmtree(source)
    _mark(path)
    return path


def ct2_vocabulary(path):
    for name in ("shared_vocabulary.json", "vocabulary.json", "source_vocabulary.json"):
        full = os.path.join(path, name)
        if os.path.exists(full):
            with open(full) as f:
                return json.load(f)
    raise SystemExit(f"{path}: no vocabulary file in the CTranslate2 model")


def prompts(count, min_len, max_len, seed=1234):
    """Seeded token-id prompts; the same list (and order) for every system and workload."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(min_len, max_len)
        out.append([rng.randrange(PROMPT_MIN_ID, PROMPT_MAX_ID) for _ in range(n)])
    return out
