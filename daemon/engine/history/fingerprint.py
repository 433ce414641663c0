""" "Already tried": is the kernel.py being saved one that history already measured or failed?

The buffer's fingerprint (its syntax tree without comments, whitespace and docstrings, see
`source.py`) is looked up among every kernel history holds: each version's (its commit, its
failed side ref, its atrex episode branch), the kernels atrex episodes evaluated on their
branches (with the evaluator's verdict from evaluations.jsonl), and experiments in the store
that carry code. Identical to a failed one is a warning ("identical to v4: FAILED
wrong_result rel_err 0.67"), to a measured one information ("identical to v1: 3.20x vs v0,
already measured"); when nothing is identical, kernels whose code differs only in
meta-parameter literals are named as the nearest ("near v3: BLOCK_SIZE 1024 (here 4096)").

No workspace code runs: `ast.parse` only. Version fingerprints are computed once per blob
for the process; a check is one parse of the buffer plus dictionary lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.daemon.engine.history.source import FACTS
from kernelscope.daemon.engine.history.timeline import History, TriedKernel
from kernelscope.protocol.history import FingerprintCheck, FingerprintMatch

NEAR_LIMIT = 3


@dataclass
class _Index:
    exact: dict[str, list[TriedKernel]] = field(default_factory=dict)
    skeleton: dict[str, list[TriedKernel]] = field(default_factory=dict)


def _build_index(history: History) -> _Index:
    index = _Index()
    version_blobs = {k.blob for k in history.tried_kernels if k.version is not None}
    for kernel in history.tried_kernels:
        if kernel.version is None and kernel.blob in version_blobs:
            continue  # an episode commit holding a version's kernel: the version says more
        facts = history.facts.get(kernel.blob)
        if facts is None or facts.fingerprint is None or facts.skeleton is None:
            continue
        index.exact.setdefault(facts.fingerprint, []).append(kernel)
        index.skeleton.setdefault(facts.skeleton, []).append(kernel)
    return index


def _label(kernel: TriedKernel, include_masked: bool) -> str:
    return f"{kernel.label} (masked)" if kernel.masked else kernel.label


def _detail(kernel: TriedKernel, include_masked: bool) -> str:
    if kernel.masked and not include_masked:
        return "its record is hidden from the active memory"
    if kernel.effect is not None and kernel.effect.outcome and kernel.detail == kernel.effect.text:
        return f"{kernel.effect.outcome}, tried and not promoted ({kernel.source})"
    return kernel.detail


def _failed(kernel: TriedKernel, include_masked: bool) -> bool:
    return kernel.passed is False and (include_masked or not kernel.masked)


def _match(
    kernel: TriedKernel,
    kind: str,
    current_blob: str | None,
    include_masked: bool,
    differences: list[str] | None = None,
    changed: list[str] | None = None,
) -> FingerprintMatch:
    current = kind == "identical" and kernel.blob == current_blob and kernel.version is not None
    if kind == "identical":
        where = " (committed at HEAD)" if current else ""
        verdict = f"identical to {_label(kernel, include_masked)}{where}: {_detail(kernel, include_masked)}"
    else:
        verdict = f"near {_label(kernel, include_masked)} ({_detail(kernel, include_masked)}): " + ", ".join(
            differences or []
        )
    hidden = kernel.masked and not include_masked
    return FingerprintMatch.model_construct(
        kind=kind,
        label=kernel.label,
        version=kernel.version,
        source=kernel.source,
        commit=kernel.commit,
        passed=None if hidden else kernel.passed,
        masked=kernel.masked,
        current=current,
        differences=differences or [],
        changed=changed or [],
        effect=None if hidden else kernel.effect,
        verdict=verdict,
    )


def _differences(
    mine: tuple[tuple[str, str], ...], theirs: tuple[tuple[str, str], ...]
) -> list[tuple[str, str, str]]:
    """(label, their value, the buffer's) of each meta-parameter whose value differs."""
    return [
        (label, value, own) for (label, own), (_, value) in zip(mine, theirs, strict=False) if own != value
    ]


def check_fingerprint(
    history: History, buffer: str | None = None, include_masked: bool = False
) -> FingerprintCheck:
    """The verdict for `buffer` (None: HEAD's kernel.py), cached per buffer text."""
    return history.per_buffer(
        f"fingerprint:{include_masked}", buffer, lambda: _check(history, buffer, include_masked)
    )


def _check(history: History, buffer: str | None, include_masked: bool) -> FingerprintCheck:
    text = buffer if buffer is not None else history.head_text()
    if text is None:
        return FingerprintCheck.model_construct(
            fingerprint=None, matches=[], verdict=None, severity=None, error="no kernel.py to check"
        )
    facts = FACTS.get(text)
    if facts.fingerprint is None:
        return FingerprintCheck.model_construct(
            fingerprint=None, matches=[], verdict=None, severity=None, error=facts.error
        )
    index = history.analyzed(_build_index)
    identical = sorted(index.exact.get(facts.fingerprint, []), key=lambda k: -k.order)
    if identical:
        # A failed twin is what the person must not miss; else the newest measured one.
        failed = [k for k in identical if _failed(k, include_masked)]
        lead = failed[0] if failed else identical[0]
        ordered = [lead] + [k for k in identical if k is not lead]
        matches = [_match(k, "identical", history.head_blob, include_masked) for k in ordered]
        first = matches[0]
        severity = "warning" if failed else ("hint" if first.current else "information")
        return FingerprintCheck.model_construct(
            fingerprint=facts.fingerprint,
            matches=matches,
            verdict=first.verdict,
            severity=severity,
            error=None,
        )
    near = []
    for kernel in index.skeleton.get(facts.skeleton or "", []):
        theirs = history.facts[kernel.blob].meta
        differences = _differences(facts.meta, theirs)
        if differences:
            near.append((len(differences), -kernel.order, kernel, differences))
    near.sort(key=lambda item: (item[0], item[1]))
    matches = [
        _match(
            kernel,
            "near",
            history.head_blob,
            include_masked,
            [f"{label} {value} (here {own})" for label, value, own in differences],
            [label for label, _, _ in differences],
        )
        for _, _, kernel, differences in near[:NEAR_LIMIT]
    ]
    return FingerprintCheck.model_construct(
        fingerprint=facts.fingerprint,
        matches=matches,
        verdict=matches[0].verdict if matches else None,
        severity="information" if matches else None,
        error=None,
    )
