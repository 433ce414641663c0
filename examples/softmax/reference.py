"""Reference for the softmax workspace."""

import torch

CPU_CONFIGS = [
    {"name": "32x100 fp32", "rows": 32, "cols": 100, "dtype": "float32"},
    {"name": "16x256 fp16", "rows": 16, "cols": 256, "dtype": "float16"},
]
CONFIGS = [
    {"name": "4096x1024 fp16", "rows": 4096, "cols": 1024, "dtype": "float16"},
    {"name": "8192x4096 fp16", "rows": 8192, "cols": 4096, "dtype": "float16"},
    {"name": "2048x2000 fp32", "rows": 2048, "cols": 2000, "dtype": "float32"},
]


def make_inputs(config, seed, device):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(config["rows"], config["cols"], generator=generator) * 3
    return (x.to(getattr(torch, config["dtype"])).to(device),)


def reference(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def bytes_moved(config):
    return 2 * config["rows"] * config["cols"] * getattr(torch, config["dtype"]).itemsize


def flops(config):
    return 5 * config["rows"] * config["cols"]
