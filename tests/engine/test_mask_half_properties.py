"""Invariants of mask-half over arbitrary memory histories (hypothesis)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelscope.daemon.engine.memory.records import MemoryManager

record_strategy = st.fixed_dictionaries(
    {
        "masked": st.booleans(),
        "gate": st.sampled_from(["PASS", "FAIL", None]),
        "latency": st.one_of(st.none(), st.floats(1, 1000, allow_nan=False)),
        "bandwidth": st.one_of(st.none(), st.floats(1, 5000, allow_nan=False)),
        "tflops": st.one_of(st.none(), st.floats(1, 2000, allow_nan=False)),
    }
)


def _write(ws: Path, records: list[dict]) -> None:
    memory = ws / "memory"
    memory.mkdir(parents=True)
    for number, spec in enumerate(records):
        data = {
            "version": f"v{number}",
            "masked": spec["masked"] and number != 0,
            "performance": {
                "latency_us": spec["latency"],
                "bandwidth_gbps": spec["bandwidth"],
                "tflops": spec["tflops"],
            },
            "quality_gate": {"result": spec["gate"]},
            "pitfalls_and_fixes": [],
            "unknown_key": {"kept": number},
        }
        (memory / f"v{number}.json").write_text(json.dumps(data, indent=2) + "\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(record_strategy, min_size=1, max_size=14),
    kind=st.sampled_from([None, "latency", "bandwidth", "tflops"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_mask_half_invariants(records: list[dict], kind: str | None, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        _write(ws, records)
        manager = MemoryManager(ws)
        before = {p.name: json.loads(p.read_text()) for p in (ws / "memory").glob("*.json")}
        next_before = manager.next_version()

        dry = manager.mask_half(kind, seed=seed, dry_run=True)  # type: ignore[arg-type]
        assert {p.name: json.loads(p.read_text()) for p in (ws / "memory").glob("*.json")} == before
        result = manager.mask_half(kind, seed=seed)  # type: ignore[arg-type]
        assert result.masked == dry.masked  # the seed reproduces the choice

        # never v0, never the best; exactly half the candidates, rounded down
        assert "v0" not in result.masked
        assert result.best_version is None or result.best_version not in result.masked
        # nor the latest successful iteration (the seed: "preserve the latest successful
        # iteration (the current best version)"; when the two differ, both stay)
        passing = [n for n, spec in enumerate(records) if n and spec["gate"] == "PASS" and not spec["masked"]]
        latest = f"v{passing[-1]}" if passing else None
        assert result.latest_passing_version == latest
        assert latest is None or latest not in result.masked
        assert len(result.masked) == len(result.candidates) // 2
        if len(result.candidates) >= 2:
            assert len(result.masked) >= 1
        assert set(result.masked) <= set(result.candidates)
        # the best really is the best passing unmasked version by the documented rule
        assert _documented_best(records, kind, result.best_version), result.best_rule
        if result.best_version is not None:
            best = before[f"{result.best_version}.json"]
            assert best["quality_gate"]["result"] == "PASS" and not best["masked"]

        after = {p.name: json.loads(p.read_text()) for p in (ws / "memory").glob("*.json")}
        assert set(after) == set(before)  # nothing deleted, nothing new
        for name, data in after.items():
            version = name[:-5]
            expected = dict(before[name])
            if version in result.masked:
                expected["masked"] = True
            if version == result.pitfall_recorded_in:
                assert data["pitfalls_and_fixes"][-1]["masked_versions"] == result.masked
                expected["pitfalls_and_fixes"] = data["pitfalls_and_fixes"]
            assert data == expected, name  # only `masked` (and the one pitfall entry) changed
            assert list(data) == list(before[name])  # key order kept

        assert manager.next_version() == next_before  # never decreases
        if result.masked:
            manager.set_masked(result.masked, masked=False)
            restored = {p.name: json.loads(p.read_text()) for p in (ws / "memory").glob("*.json")}
            for name, data in restored.items():
                expected = dict(before[name])
                if name[:-5] == result.pitfall_recorded_in:
                    expected["pitfalls_and_fixes"] = data["pitfalls_and_fixes"]
                assert data == expected  # unmask restores


def _documented_best(records: list[dict], kind: str | None, chosen: str | None) -> bool:
    """Whether `chosen` is the best by the documented rule (docs/memory.md, mask-half): among
    unmasked versions whose gate passed, the highest score vs v0, which is v0's latency over
    the version's where both record one, else the ratio of the README's metric (`kind`:
    tflops, bandwidth) to v0's; with no score, the highest README metric, else the lowest latency,
    else the latest passing version. Ties go to the later version."""
    passing = {
        f"v{n}": spec
        for n, spec in enumerate(records)
        if spec["gate"] == "PASS" and not (spec["masked"] and n)
    }
    base = records[0]

    def score(spec: dict) -> float | None:
        if base["latency"] is not None and spec["latency"] is not None:
            return base["latency"] / spec["latency"]
        if kind in ("tflops", "bandwidth") and base[kind] is not None and spec[kind] is not None:
            return spec[kind] / base[kind]
        return None

    scored = {version: score(spec) for version, spec in passing.items()}
    values = [value for value in scored.values() if value is not None]
    if values:
        return chosen == [v for v, value in scored.items() if value == max(values)][-1]
    field = kind if kind in ("tflops", "bandwidth") else "latency"
    for metric, pick in ((field, max if field != "latency" else min), ("latency", min)):
        found = [spec[metric] for spec in passing.values() if spec[metric] is not None]
        if found:
            return chosen == [v for v, spec in passing.items() if spec[metric] == pick(found)][-1]
    return chosen == (list(passing)[-1] if passing else None)
