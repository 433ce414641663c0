"""Splitting one candidate's benchmark into configuration groups, and merging them back.

On a cluster, a candidate with many shapes need not run them one after another: group I of N
runs configurations I, I+N, I+2N... as its own task (`--config-group I/N`). Each
configuration's speedup is still measured within one task, candidate and baseline
interleaved on the same device, so groups can land on different machines. The merged result
is what one run would have given: configurations in their original order, the score as the
geometric mean over all of them, and its bootstrap interval recomputed from every timing
sample (the groups return them with `--keep-samples`; the merge drops them again).
"""

from __future__ import annotations

from dataclasses import replace

from kernelscope.daemon.engine.run.bench import BenchRequest
from kernelscope.protocol.bench import GROUP_PREFIX, BenchResult, ConfigResult
from kernelscope.protocol.stats import (
    NOISY_PREFIX,
    Verdict,
    geomean,
    noisy_message,
    score_summary,
    verdict_of,
)


def split_request(request: BenchRequest, groups: int) -> list[BenchRequest]:
    """One request per configuration group (the request itself when groups is 1)."""
    if groups <= 1:
        return [request]
    return [
        replace(
            request,
            extra_args=[*request.extra_args, "--config-group", f"{index}/{groups}", "--keep-samples"],
        )
        for index in range(groups)
    ]


def _in_original_order(parts: list[BenchResult]) -> list[ConfigResult]:
    """Group I's k-th configuration was configuration I + k*N of the whole run."""
    count = len(parts)
    indexed = [
        (index + position * count, config)
        for index, part in enumerate(parts)
        for position, config in enumerate(part.configs)
    ]
    return [config for _, config in sorted(indexed, key=lambda item: item[0])]


def merge_results(parts: list[BenchResult]) -> BenchResult:
    """The groups of one candidate as one BenchResult."""
    if len(parts) == 1:
        return parts[0]
    # A failure of the whole run (import, crash, timeout, unsupported) happens in every group
    # that reached it: report the first, naming its group.
    for index, part in enumerate(parts):
        if part.status in ("error", "unsupported"):
            merged = part.model_copy(deep=True)
            merged.messages.append(f"{GROUP_PREFIX}{index}/{len(parts)} failed as a whole")
            return merged
    configs = _in_original_order(parts)
    passed = all(part.passed for part in parts)
    score = score_ci = None
    noisy = False
    # Per-group notes (an empty group, a group's own noise verdict) give way to the merged ones.
    messages = list(
        dict.fromkeys(
            m
            for part in parts
            for m in part.messages
            if not m.startswith(GROUP_PREFIX) and not m.startswith(NOISY_PREFIX)
        )
    )
    if passed and configs:
        samples = [(c.baseline_times_ms or [], c.candidate_times_ms or []) for c in configs]
        if all(base and cand for base, cand in samples):
            score, score_ci, noisy = score_summary(
                [c.speedup or 0.0 for c in configs], [c.speedup_ci for c in configs], samples
            )
            if noisy:
                messages.append(noisy_message(score_ci))
        else:  # a group from an older runner without samples: the score, no interval
            score = geomean([c.speedup or 0.0 for c in configs])
    score_vs_parent = None
    ratios = [c.speedup_vs_parent for c in configs if c.speedup_vs_parent]
    if passed and configs and len(ratios) == len(configs):
        score_vs_parent = geomean(ratios)
    for config in configs:
        config.baseline_times_ms = config.candidate_times_ms = None
    first = parts[0]
    comparable = all(part.comparable for part in parts)
    bands = [part.noise_band for part in parts if part.noise_band]
    # The groups' A/A bands, widened to cover them all: the merged run is no surer than its
    # noisiest group.
    noise_band = (min(b[0] for b in bands), max(b[1] for b in bands)) if bands else None
    verdict: Verdict | None = None
    if score is not None and score_ci is not None and noise_band is not None:
        verdict = verdict_of(score, score_ci, noise_band) if comparable else "not comparable"
    messages.append(f"measured as {len(parts)} configuration groups, one task each")
    # What the groups share (workspace, candidate, baseline, entry point, environment, the
    # problem's lint) is the first group's; what they measured is merged.
    return first.model_copy(
        deep=True,
        update={
            "status": "ok" if passed else "gate_failed",
            "passed": passed,
            "configs": configs,
            "score": score,
            "score_ci": score_ci,
            "score_vs_parent": score_vs_parent,
            "noisy": noisy,
            "noise_band": noise_band,
            "verdict": verdict,
            "comparable": comparable,
            "suspicious": next((p.suspicious for p in parts if p.suspicious), None),
            "error": next((c.error for c in configs if c.error), None)
            or next((p.error for p in parts if p.error), None),
            "messages": messages,
            "duration_s": sum(p.duration_s or 0.0 for p in parts),
        },
    )
