"""Runs kernels: the benchmark and correctness harness (in a subprocess, never inside the
daemon), roofline maths, and the example workspaces' helpers."""
