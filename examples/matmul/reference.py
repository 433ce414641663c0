"""Reference for the matmul workspace (fp16 and fp32)."""

import torch

CPU_CONFIGS = [
    {"name": "64x64x64 fp32", "M": 64, "N": 64, "K": 64, "dtype": "float32"},
    {"name": "96x80x64 fp16", "M": 96, "N": 80, "K": 64, "dtype": "float16"},
]
CONFIGS = [
    {"name": "4096x4096x4096 fp16", "M": 4096, "N": 4096, "K": 4096, "dtype": "float16"},
    {"name": "8192x8192x1024 fp16", "M": 8192, "N": 8192, "K": 1024, "dtype": "float16"},
    {"name": "2048x2048x2048 fp32", "M": 2048, "N": 2048, "K": 2048, "dtype": "float32"},
]
# Triton accumulates in a different order (and uses TF32 on GPUs for fp32 dots).
TOLERANCE = {"rel_err": 0.01}


def make_inputs(config, seed, device):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, config["dtype"])
    a = torch.randn(config["M"], config["K"], generator=generator)
    b = torch.randn(config["K"], config["N"], generator=generator)
    return (a.to(dtype).to(device), b.to(dtype).to(device))


def reference(a, b):
    return (a.float() @ b.float()).to(a.dtype)


def flops(config):
    return 2 * config["M"] * config["N"] * config["K"]


def bytes_moved(config):
    size = getattr(torch, config["dtype"]).itemsize
    return (config["M"] * config["K"] + config["K"] * config["N"] + config["M"] * config["N"]) * size
