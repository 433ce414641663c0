"""The memory estimate (kernels/sizing.py) counts the pristine copy the timing keeps of an input
the reference changes in place (kernels/input_changes.py, TimedCallChecks.pristine)."""

from __future__ import annotations

import torch

from kernelscope.kernels.sizing import harness_footprint, meta_sizes


class AddsInPlace(torch.nn.Module):
    def forward(self, acc: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        acc.add_(rows)  # accumulates into its first input, as moe_index_add does
        return acc


class Pure(torch.nn.Module):
    def forward(self, acc: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return acc + rows


def sizes_of(model: type) -> tuple[int, str, int]:
    sizes = meta_sizes(
        lambda: [torch.zeros(1024, 256), torch.ones(1024, 256)], lambda: [], model, lambda x: x, torch.float32
    )
    footprint = harness_footprint(sizes, seeds=3, models=2, timing_input_sets=2)
    return sizes.changed_bytes, footprint.explain(), footprint.total


def test_an_input_the_reference_changes_counts_its_pristine_copy() -> None:
    changed, explained, total = sizes_of(AddsInPlace)
    assert changed == 1024 * 256 * 4  # the one input it changes, not both
    assert "1.0 MB of pristine copies of the inputs the reference changes in place" in explained
    pure_changed, pure_explained, pure_total = sizes_of(Pure)
    assert pure_changed == 0 and "pristine" not in pure_explained
    assert total == pure_total + changed
