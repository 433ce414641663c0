"""LayerNorm forward, deliberately slower: separate passes for mean, variance and output."""

import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_three_pass(x_ptr, w_ptr, b_ptr, y_ptr, stride, n_cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    total = 0.0
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        total += tl.sum(tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32), axis=0)
    mean = total / n_cols
    squares = 0.0
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        centered = tl.where(cols < n_cols, x - mean, 0.0)
        squares += tl.sum(centered * centered, axis=0)
    rstd = 1.0 / tl.sqrt(squares / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < n_cols
        x = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(
            y_ptr + row * stride + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask
        )


def kernel_fn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    layernorm_three_pass[(n_rows,)](x, weight, bias, y, x.stride(0), n_cols, eps, CHUNK=32)
    return y
