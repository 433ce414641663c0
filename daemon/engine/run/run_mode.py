"""The mode (`gpu` or `interpreter`) a benchmark run is in, told without running it.

A request may say `auto` (the CLI's default), but a result's mode is one of the two: the gate
command's result, the check that a runner's pass measured in the mode this launcher ran it
in, and a result no runner gave (a job a Ctrl-C stopped, a Ray task lost) all need the mode
`auto` comes to here, and each must come to the same one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# The device nodes of a GPU driver (NVIDIA, AMD's ROCm, WSL's): the daemon never imports torch
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def gpu_device_present() -> bool:
    return any(os.path.exists(node) for node in GPU_DEVICE_NODES)


def expected_mode(mode: str, env: Mapping[str, str]) -> str:
    """The requested mode, else the interpreter when the run has TRITON_INTERPRET=1 or no GPU
    device node exists, else the GPU."""
    if mode in ("gpu", "interpreter"):
        return mode
    if env.get("TRITON_INTERPRET") == "1":
        return "interpreter"
    return "gpu" if gpu_device_present() else "interpreter"
