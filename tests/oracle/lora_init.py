"""Random LoRA weights for oracle adapters.

PEFT initialises lora_B to zero, so a freshly made adapter changes nothing; the oracles fill A and B
from a seeded generator instead, scaled by 1/sqrt(fan-in) so that each adapter moves the logits
without swamping the base model. `b_scale` sets how far.
"""
import torch


def randomize_lora(model, seed, b_scale):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            elif "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * b_scale / p.shape[1] ** 0.5)
