"""Timed calls, measured (runner child only): the harness's own timing loop, `Timer`.

`Timer.run` times a function's calls and lets a `CallChecks` act between them, outside the
timed region (kernels/timed_checks.py holds the checks: perturbation, verified calls, the
hidden audit); every timed call of the candidate must launch at least one Triton kernel.

On a GPU the loop is the harness's own (not `do_bench`): L2 is flushed before every timed call
in plain and CUDA-graph mode alike (tritonbench #519: do_bench_cudagraph did not), persisting
L2 is reset, each call is bracketed by CUDA events and synchronized (launch-inclusive time),
and a separate pass records events around each Triton launch (kernel-only time, tritonbench
#386: do_bench includes CPU launch overhead).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch

from kernelscope.kernels.integrity import Guard, perf_counter
from kernelscope.protocol.stats import REP_MS, WARMUP_MS

if TYPE_CHECKING:
    from kernelscope.protocol.bench import ErrorKind


class CallChecks(Protocol):
    """What `Timer.run` calls between timed calls: `TimedCallChecks` for the candidate,
    `PerturbOnly` for the baseline and parent (kernels/timed_checks.py)."""

    def before(self, index: int) -> None: ...

    def after(self, index: int, output: Any) -> None: ...

    def audit_point(self, index: int) -> None: ...

    def restore(self) -> None: ...


class TimedCheckFailure(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


@dataclass
class Timed:
    samples_ms: list[float] = field(default_factory=list)
    kernel_ms: list[float] = field(default_factory=list)  # GPU: summed Triton launch times per call
    launches: list[int] = field(default_factory=list)  # Triton launches per timed call


_RESET: list[Callable[[], Any] | None] = []


def _persisting_l2_reset() -> Callable[[], Any] | None:
    """`cudaCtxResetPersistingL2Cache` of the CUDA runtime this process loaded (torch's
    cudart bindings do not include it), found once; None where there is none."""
    if _RESET:
        return _RESET[0]
    found = None
    with contextlib.suppress(Exception):
        import ctypes

        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps if "libcudart" in line and "/" in line})
        if paths:
            function = ctypes.CDLL(paths[0]).cudaCtxResetPersistingL2Cache
            function.restype = ctypes.c_int
            found = function
    _RESET.append(found)
    return found


@dataclass(eq=False)  # identity, as the objects they are
class Timer:
    """Runs timed calls: the interpreter's wall-clock loop, or the GPU loop described above."""

    mode: str
    guard: Guard
    reps: int
    warmup_ms: float | None  # None: not asked for, WARMUP_MS (the runner's --warmup-ms)
    rep_ms: float | None  # None: REP_MS
    graph: bool
    _flush: torch.Tensor | None = field(default=None, init=False)
    _calls_per_phase: dict[int, int] = field(default_factory=dict, init=False)

    # -- GPU plumbing -----------------------------------------------------------------------

    def _flush_l2(self) -> None:
        if self._flush is None:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            size = max(int(getattr(props, "L2_cache_size", 0) or 0) * 2, 256 * 2**20)
            self._flush = torch.empty(size, dtype=torch.int8, device="cuda")
        self._flush.zero_()
        reset = _persisting_l2_reset()
        if reset is not None:  # persisting L2 lines would survive the flush
            reset()

    def new_configuration(self) -> None:
        """Forget the per-function estimates: a problem hands the same function object to every
        configuration, and a small one's call count (and warmup) would be a large one's."""
        self._calls_per_phase.clear()

    def _gpu_calls(self, fn: Callable[[], Any], key: int, prepare: Callable[[], Any]) -> int:
        """How many timed calls fit in rep_ms, from a short warmup (at least 10, at most 1000);
        estimated once per function timed (`key`) per configuration (`new_configuration`).
        Every warm-up call is `prepare`d as a timed call is (inputs the reference changes
        restored, destination outputs zeroed), so none starts from what an earlier one left."""
        if key not in self._calls_per_phase:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def warm() -> None:
                prepare()
                fn()

            warm()
            torch.cuda.synchronize()
            start.record()
            for _ in range(5):
                warm()
            end.record()
            torch.cuda.synchronize()
            estimate = max(start.elapsed_time(end) / 5, 1e-3)
            warm_calls = int((WARMUP_MS if self.warmup_ms is None else self.warmup_ms) / estimate)
            for _ in range(min(warm_calls, 1000)):
                warm()
            rep_ms = REP_MS if self.rep_ms is None else self.rep_ms
            self._calls_per_phase[key] = max(10, min(1000, int(rep_ms / estimate)))
        return self._calls_per_phase[key]

    # -- the loop --------------------------------------------------------------------------

    def run(
        self,
        fn: Callable[..., Any],
        inputs: tuple[Any, ...],
        checks: CallChecks | None = None,
        counted: bool = False,
    ) -> Timed:
        """Time `fn(*inputs)`. `checks` acts between calls; `counted` counts Triton launches
        (the candidate's calls: every one must launch at least one). A `fn` with a
        `prepare_timed_call()` (a destination-passing call zeroing its outputs) gets it before
        every timed call, untimed."""
        timed = Timed()
        call = lambda: fn(*inputs)  # noqa: E731
        zero = getattr(fn, "prepare_timed_call", None) or (lambda: None)
        restore = checks.restore if checks is not None else (lambda: None)

        def prepare() -> None:
            restore()
            zero()

        gpu = self.mode == "gpu"
        calls = self._gpu_calls(call, id(fn), prepare) if gpu else self.reps
        graph = self._capture(call, prepare) if gpu and self.graph else None
        for index in range(calls):
            if checks is not None:
                checks.before(index)
            prepare()
            if gpu:
                self._flush_l2()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with self.guard.launches.counting() as launches:
                if gpu:
                    start.record()
                    out = graph.replay() if graph is not None else call()
                    end.record()
                    torch.cuda.synchronize()
                    elapsed = start.elapsed_time(end)
                else:
                    began = perf_counter()
                    out = call()
                    elapsed = (perf_counter() - began) * 1000.0
                count = launches.count
            timed.samples_ms.append(elapsed)
            if counted and graph is None:
                timed.launches.append(count)
                if count == 0:
                    raise TimedCheckFailure(
                        "no_kernel", f"timed call {index} launched no Triton kernel (the checked calls did)"
                    )
            if checks is not None:
                checks.after(index, graph.output if graph is not None else out)
                out = None  # released before the audit allocates its own inputs and outputs
                checks.audit_point(index)
        if gpu and counted and graph is None:
            timed.kernel_ms = self._kernel_only(call, max(5, min(calls, 20)), prepare)
        return timed

    def _kernel_only(self, call: Callable[[], Any], calls: int, prepare: Callable[[], Any]) -> list[float]:
        """Per call, the summed time of its Triton launches (CUDA events around each launch)."""
        pending: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

        def around(launch: Callable[[], Any]) -> Any:
            before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            before.record()
            result = launch()
            after.record()
            pending.append((before, after))
            return result

        totals = []
        self.guard.launches.on_launch = around
        try:
            for _ in range(calls):
                prepare()
                self._flush_l2()
                pending.clear()
                with self.guard.launches.counting():
                    call()
                torch.cuda.synchronize()
                totals.append(sum(a.elapsed_time(b) for a, b in pending))
        finally:
            self.guard.launches.on_launch = None
        return totals

    def _capture(self, call: Callable[[], Any], prepare: Callable[[], Any]) -> _Graph:
        with self.guard.streams.paused():  # the harness's own capture stream is not the candidate's
            return self._capture_on_side_stream(call, prepare)

    def _capture_on_side_stream(self, call: Callable[[], Any], prepare: Callable[[], Any]) -> _Graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm-up calls, prepared as the timed ones are
                prepare()
                call()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            output = call()
        return _Graph(graph, output)


@dataclass
class _Graph:
    graph: Any
    output: Any

    def replay(self) -> Any:
        self.graph.replay()
        return self.output
