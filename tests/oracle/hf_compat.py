"""Shims that make transformers 4.46 run on Debian's torch 1.13 + Python 3.11.

Debian's torch.distributed.fsdp fails to import on Python 3.11 (a dataclass with a mutable
default); transformers' generate() and M2M100's encoder and decoder import it only to ask whether
the model is FSDP-managed. Nothing here changes numerics.
"""
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import transformers  # noqa: E402
import transformers.generation.utils as _gen_utils  # noqa: E402

_gen_utils.is_fsdp_managed_module = lambda module: False
import transformers.models.m2m_100.modeling_m2m_100 as _m2m_100  # noqa: E402

_m2m_100.is_fsdp_managed_module = lambda module: False


def versions():
    import torch
    import tokenizers
    info = {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
    try:
        import peft
        info["peft"] = peft.__version__
    except ImportError:
        pass
    return info


def quiet_oracle_args():
    """What a generate-style oracle step starts with: its --out argument, one torch thread (the
    records must not depend on the machine's cores), and the warnings HF and PEFT print about what
    the tiny models do on purpose (tied lm_head targets, generation flags) silenced."""
    import argparse
    import warnings
    import torch
    from transformers.utils import logging as hf_logging
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=UserWarning)
    return args
