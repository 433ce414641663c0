"""Reference for the vector-add workspace: configurations, inputs, eager PyTorch result."""

import torch

# Small shapes for the CPU interpreter (TRITON_INTERPRET=1): correctness, not speed.
CPU_CONFIGS = [
    {"name": "n=4096", "n": 4096, "dtype": "float32"},
    {"name": "n=5000", "n": 5000, "dtype": "float16"},
]

CONFIGS = [
    {"name": "n=98304", "n": 98304, "dtype": "float32"},
    {"name": "n=1048576", "n": 1048576, "dtype": "float32"},
    {"name": "n=16777216", "n": 16777216, "dtype": "float32"},
]


def make_inputs(config, seed, device):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, config["dtype"])
    x = torch.randn(config["n"], generator=generator, dtype=dtype).to(device)
    y = torch.randn(config["n"], generator=generator, dtype=dtype).to(device)
    return (x, y)


def reference(x, y):
    return x + y


def bytes_moved(config):
    return 3 * config["n"] * getattr(torch, config["dtype"]).itemsize


def flops(config):
    return config["n"]
