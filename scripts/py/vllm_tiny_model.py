"""A tiny random Llama and a PEFT LoRA adapter for it, built offline, for scripts/check-vllm.

Nothing is downloaded: the tokenizer is a byte-level BPE trained here on a fixed word list (so any
prompt encodes), the model is LlamaForCausalLM from a small config with a fixed seed, and the
adapter is PEFT's own (get_peft_model + save_pretrained) with seeded non-zero lora_A/lora_B, so that
it changes the greedy output. The head size (64) is one vLLM's CPU attention supports.

It also writes OUT_DIR/reference.json: what HF transformers + PEFT compute on the same model and
adapter (greedy continuations with each chosen token's log-probability, and a stop-string case), the
ground truth the check's answers from vLLM are compared with.

usage: python vllm_tiny_model.py OUT_DIR     (writes OUT_DIR/model, OUT_DIR/adapter, OUT_DIR/reference.json)
"""
import json
import os
import sys

import torch
from peft import LoraConfig, get_peft_model
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SEED = 1234
WORDS = ("queen wolf kite goat sun rain owl jam hat tree lamp fish book door ship star milk road "
         "bird cake ring moon snow leaf one two three four five six seven eight nine zero the a of and "
         "to in is it on for with as at by this that from hello world").split()


def corpus():
    # A fixed text, so that training the BPE is deterministic.
    for i in range(400):
        yield " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(12)) + "."


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def main():
    out = os.path.abspath(sys.argv[1])
    mdir, adir = os.path.join(out, "model"), os.path.join(out, "adapter")
    tokenizer = build_tokenizer()
    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=False, torch_dtype="float32")
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        # HF's init (std 0.02) gives near-uniform logits; a larger scale gives a model whose greedy
        # choices are clear, so that base and adapter outputs differ by more than rounding.
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.15)
    model.save_pretrained(mdir, safe_serialization=True)
    tokenizer.save_pretrained(mdir)

    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, init_lora_weights=False,
                                                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                                  task_type="CAUSAL_LM"))
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_A" in name or "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
    peft_model.peft_config["default"].base_model_name_or_path = mdir
    peft_model.save_pretrained(adir, safe_serialization=True)

    import peft
    import transformers
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}
    reference = {"versions": versions, "new_tokens": NEW_TOKENS, "cases": [], "stop": None}
    base = LlamaForCausalLM.from_pretrained(mdir, dtype=torch.float32).eval()
    for prompt in PROMPTS:
        reference["cases"].append(dict(greedy(base, tokenizer, prompt, NEW_TOKENS), adapter=""))
    reference["stop"] = stop_case(tokenizer, reference["cases"][0])
    from peft import PeftModel
    lora = PeftModel.from_pretrained(base, adir).eval()
    for prompt in PROMPTS:
        reference["cases"].append(dict(greedy(lora, tokenizer, prompt, NEW_TOKENS), adapter=ADAPTER))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    print(json.dumps({"model": mdir, "adapter": adir, "vocab_size": len(tokenizer), "seed": SEED, **versions}))


PROMPTS = ["queen wolf kite", "rain owl jam hat"]
NEW_TOKENS = 24
ADAPTER = "tiny-lora"   # the name scripts/check-vllm serves the adapter under


def greedy(model, tokenizer, prompt, n):
    """HF greedy decoding without EOS (the check sends ignore_eos), float32 log-softmax per step."""
    ids = tokenizer(prompt).input_ids
    x = torch.tensor([ids])
    out, logprobs = [], []
    with torch.no_grad():
        for _ in range(n):
            lp = torch.log_softmax(model(x).logits[0, -1].float(), -1)
            t = int(lp.argmax())
            out.append(t)
            logprobs.append(float(lp[t]))
            x = torch.cat([x, torch.tensor([[t]])], 1)
    # A random byte-level model ends on incomplete UTF-8 sequences now and then: vLLM's incremental
    # detokenizer leaves those trailing bytes out of the final text, decode() makes them U+FFFD.
    text = tokenizer.decode(out).rstrip("\ufffd")
    return {"prompt": prompt, "prompt_tokens": len(ids), "token_ids": out, "logprobs": logprobs, "text": text}


def stop_case(tokenizer, case):
    """A stop string taken from the base model's own continuation: the first token after the second
    that decodes to three or more ASCII letters. The text before its first occurrence is the answer."""
    for t in case["token_ids"][2:]:
        piece = tokenizer.decode([t]).strip()
        if len(piece) >= 3 and piece.isascii() and piece.isalpha():
            return {"prompt": case["prompt"], "stop": piece, "text": case["text"][:case["text"].index(piece)]}
    raise SystemExit("no stop string found in the base continuation: change the prompt or the seed")


if __name__ == "__main__":
    main()
