"""Small statistics for benchmark results (pure Python: the runner must not need numpy)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Literal

NOISY_THRESHOLD = 0.05  # relative width of the score's 95% interval beyond which a run is noisy


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def bootstrap_ratio_ci(
    baseline: Sequence[float], candidate: Sequence[float], resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of median(baseline) / median(candidate), resampling each side."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        b = statistics.median(rng.choices(baseline, k=len(baseline)))
        c = statistics.median(rng.choices(candidate, k=len(candidate)))
        ratios.append(b / c)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def bootstrap_geomean_ci(
    samples: Sequence[tuple[Sequence[float], Sequence[float]]], resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of the geometric-mean speedup over configurations."""
    rng = random.Random(seed)
    scores = []
    for _ in range(resamples):
        ratios = [
            statistics.median(rng.choices(b, k=len(b))) / statistics.median(rng.choices(c, k=len(c)))
            for b, c in samples
        ]
        scores.append(geomean(ratios))
    scores.sort()
    return scores[int(0.025 * resamples)], scores[int(0.975 * resamples) - 1]


def score_summary(
    speedups: Sequence[float],
    speedup_cis: Sequence[tuple[float, float] | None],
    samples: Sequence[tuple[Sequence[float], Sequence[float]]],
    noisy_threshold: float = NOISY_THRESHOLD,
) -> tuple[float, tuple[float, float], bool]:
    """The score (geometric-mean speedup over configurations), its bootstrap 95% interval
    from the (baseline, candidate) timing samples of every configuration, and whether the run
    is noisy: the score's interval, or any configuration's, too wide to trust small changes.
    One definition for a whole run and for a run split into configuration groups."""
    score = geomean(speedups)
    score_ci = bootstrap_geomean_ci(samples)
    widths = [(ci[1] - ci[0]) / value for value, ci in zip(speedups, speedup_cis, strict=True) if ci]
    noisy = (score_ci[1] - score_ci[0]) / score > noisy_threshold or any(
        width > 2 * noisy_threshold for width in widths
    )
    return score, score_ci, noisy


Verdict = Literal["faster", "slower", "no measurable change", "not comparable"]


def verdict_of(score: float, score_ci: tuple[float, float], noise_band: tuple[float, float]) -> Verdict:
    """ "faster", "slower" or "no measurable change": a score inside the run's own A/A noise band,
    or whose interval holds 1.0, is no change at all."""
    low, high = noise_band
    if low <= score <= high or score_ci[0] <= 1.0 <= score_ci[1]:
        return "no measurable change"
    return "faster" if score > 1.0 else "slower"


NOISY_PREFIX = "noisy: "


def noisy_message(score_ci: tuple[float, float]) -> str:
    return (
        f"{NOISY_PREFIX}the 95% interval of the score is {score_ci[0]:.3f}-{score_ci[1]:.3f}; "
        "re-run, or measure longer (`kernelscope bench --rounds 4 --rep-ms 200`), before trusting small "
        "differences"
    )


# Why a figure the CPU interpreter measured judges no GPU target (a stop condition, the lens's
# best figure): said in these words wherever one is left unjudged.
NOT_GPU_FIGURES = "interpreter timings are not GPU figures"


# The GPU timer's budgets where `--warmup-ms` / `--rep-ms` do not ask for others (kernels/timing.py)
WARMUP_MS, REP_MS = 25.0, 100.0


def timing_messages(
    mode: str, cuda_graph: bool = False, budgets: tuple[float | None, float | None] = (None, None)
) -> list[str]:
    """What a run says of how it timed: under the CPU interpreter, that its timings are no GPU
    figures (and, where a CUDA graph or GPU time budgets, `budgets` = (--warmup-ms, --rep-ms),
    were asked for, that none was used: the interpreter has no graphs and times a fixed number
    of calls); on a GPU with `--cuda-graph`, that the times are a graph's replays."""
    if mode == "gpu":
        return [CUDA_GRAPH_USED] if cuda_graph else []
    messages = [
        "interpreter mode (TRITON_INTERPRET=1, CPU): a correctness run; its timings are not GPU "
        "figures and must not be compared with them (the score is marked comparable: false)"
    ]
    if cuda_graph:
        messages.append(
            "--cuda-graph was not used: the CPU interpreter has no CUDA graphs, so its calls were "
            "timed one by one (CUDA-graph timing needs a GPU)"
        )
    asked = [
        flag for flag, value in zip(("--warmup-ms", "--rep-ms"), budgets, strict=True) if value is not None
    ]
    if asked:
        messages.append(
            f"{' and '.join(asked)} {'was' if len(asked) == 1 else 'were'} not used: the CPU interpreter "
            "times a fixed number of calls, not a time budget (the budgets are GPU timing's)"
        )
    return messages


CUDA_GRAPH_USED = (
    "--cuda-graph: each timed call was a CUDA graph's replay (captured once per function and "
    "configuration, L2 flushed before every replay): the times leave out the CPU launch overhead, "
    "and there are no kernel-only times (those are measured on plain calls)"
)
