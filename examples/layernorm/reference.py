"""Reference for the layernorm workspace."""

import torch

CPU_CONFIGS = [
    {"name": "16x96 fp32", "rows": 16, "cols": 96, "dtype": "float32"},
    {"name": "8x256 fp16", "rows": 8, "cols": 256, "dtype": "float16"},
]
CONFIGS = [
    {"name": "4096x1024 fp16", "rows": 4096, "cols": 1024, "dtype": "float16"},
    {"name": "8192x4096 fp16", "rows": 8192, "cols": 4096, "dtype": "float16"},
    {"name": "4096x768 fp32", "rows": 4096, "cols": 768, "dtype": "float32"},
]


def make_inputs(config, seed, device):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, config["dtype"])
    x = torch.randn(config["rows"], config["cols"], generator=generator) * 2 + 0.5
    weight = torch.rand(config["cols"], generator=generator) + 0.5
    bias = torch.randn(config["cols"], generator=generator)
    return (x.to(dtype).to(device), weight.to(dtype).to(device), bias.to(dtype).to(device))


def reference(x, weight, bias):
    y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), eps=1e-5)
    return y.to(x.dtype)


def bytes_moved(config):
    return 2 * config["rows"] * config["cols"] * getattr(torch, config["dtype"]).itemsize


def flops(config):
    return 8 * config["rows"] * config["cols"]
