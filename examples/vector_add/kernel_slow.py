"""Vector add, deliberately slower: tiny blocks (many more programs), for A/B tests."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel_small_blocks(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def kernel_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    add_kernel_small_blocks[(triton.cdiv(n_elements, 64),)](x, y, out, n_elements, BLOCK_SIZE=64)
    return out
