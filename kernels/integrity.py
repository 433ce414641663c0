"""What a candidate could do to fake a score, watched from the harness's side (runner child only).

Installed before the candidate module is imported, so nothing it does at import time escapes:

- `LaunchCounter` wraps Triton's launch entry points (`JITFunction.run`, and
  `InterpretedFunction.run` under TRITON_INTERPRET=1; autotuned and heuristics kernels go
  through them) to count the candidate's launches per call, and can *neutralize* them (skip
  the launch) to see whether the output still comes out right without any kernel running:
  "no Triton, no score" (SOL-ExecBench and KernelBench only check statically or not at all).
- `Tamper` snapshots the timing and comparison functions the harness relies on (`time.*`
  clocks, `torch.cuda.Event.*`, `torch.cuda.synchronize`, `triton.testing.do_bench*`, the
  torch functions the gate compares with, the harness's own modules, the launch hooks) and
  reports any that a candidate replaced; the harness itself calls clocks it captured at import.
- Threads the candidate left running after a call, and CUDA streams it created (on a GPU), are
  named cheats: work on another thread or stream escapes the timed region.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# The harness's own clocks, captured before any candidate runs: a candidate that replaces
# time.perf_counter changes what `time.perf_counter` names, not these.
perf_counter: Callable[[], float] = time.perf_counter


class LaunchCounter:
    """Counts (and optionally skips) Triton kernel launches while `active`."""

    def __init__(self) -> None:
        self.active = False
        self.neutralize = False
        self.count = 0
        self.originals: dict[tuple[type, str], Callable[..., Any]] = {}
        self.wrappers: dict[tuple[type, str], Callable[..., Any]] = {}
        self.on_launch: Callable[[Callable[[], Any]], Any] | None = None  # e.g. CUDA events around it
        # GPU: Triton's own launch hook also sees launches of compiled kernels that bypass
        # JITFunction.run (a `CompiledKernel[grid](...)` call), and the stream of each launch.
        self.driver_launches = 0
        self.streams: set[int] = set()
        self.hook_chain: Any = None

    def install(self) -> None:
        """Wrap the launch entry points of every Triton function class present."""
        classes: list[type] = []
        try:
            from triton.runtime.jit import JITFunction

            classes.append(JITFunction)
        except ImportError:  # no triton: nothing can launch, every candidate is framework-only
            return
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        try:
            import torch
            from triton import knobs

            if torch.cuda.is_available() and not _interpreted():
                self.hook_chain = knobs.runtime.launch_enter_hook
        except Exception:  # an older Triton without knobs: the JITFunction.run count alone
            self.hook_chain = None
        for cls in classes:
            original = cls.__dict__.get("run")
            if original is None:
                continue
            wrapper = self._wrap(original)
            self.originals[(cls, "run")] = original
            self.wrappers[(cls, "run")] = wrapper
            setattr(cls, "run", wrapper)  # noqa: B010

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        counter = self

        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if warmup or not counter.active:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            counter.count += 1
            if counter.neutralize:
                return None
            if counter.on_launch is not None:
                return counter.on_launch(lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs))
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        run.__kernelscope_launch_hook__ = True  # type: ignore[attr-defined]
        return run

    def _driver_hook(self, metadata: Any) -> None:
        self.driver_launches += 1
        try:
            stream = metadata.get().get("stream")
        except Exception:
            stream = None
        if isinstance(stream, int):
            self.streams.add(stream)

    @contextmanager
    def counting(self, neutralize: bool = False, driver: bool = False) -> Iterator[LaunchCounter]:
        """Count launches inside the block. `driver` also counts through Triton's launch hook
        (GPU; checked calls only: the hook costs time per launch)."""
        self.count, self.active, self.neutralize = 0, True, neutralize
        self.driver_launches, self.streams = 0, set()
        hooked = driver and self.hook_chain is not None
        if hooked:
            self.hook_chain.add(self._driver_hook)
        try:
            yield self
        finally:
            self.active, self.neutralize = False, False
            if hooked:
                self.hook_chain.remove(self._driver_hook)
            self.count = max(self.count, self.driver_launches)

    def intact(self) -> list[str]:
        """Names of launch entry points (and Triton's launch hook chain) a candidate replaced."""
        replaced = [
            f"{cls.__module__}.{cls.__name__}.{name}"
            for (cls, name), wrapper in self.wrappers.items()
            if cls.__dict__.get(name) is not wrapper
        ]
        if self.hook_chain is not None:
            from triton import knobs

            if knobs.runtime.launch_enter_hook is not self.hook_chain:
                replaced.append("triton.knobs.runtime.launch_enter_hook")
        return replaced


def _interpreted() -> bool:
    import os

    return os.environ.get("TRITON_INTERPRET") == "1"


def _callables(namespace: Any, names: list[str] | None = None) -> dict[str, Any]:
    items = vars(namespace).items() if names is None else ((n, getattr(namespace, n, None)) for n in names)
    return {name: value for name, value in items if callable(value) and not isinstance(value, type)}


class Tamper:
    """Identity snapshot of the functions the harness's measurements and comparisons rely on."""

    def __init__(self, extra_modules: list[types.ModuleType]) -> None:
        import statistics

        import torch

        self.watched: dict[str, tuple[Any, str, Any]] = {}
        self._add("time", time, _callables(time))
        self._add("statistics", statistics, _callables(statistics))
        self._add("threading", threading, _callables(threading, ["Thread", "enumerate", "active_count"]))
        gate_names = [
            "equal", "allclose", "isclose", "isfinite", "where", "zeros_like", "as_strided", "empty", "clone",
        ]  # fmt: skip
        self._add("torch", torch, _callables(torch, gate_names))
        self._add("torch.linalg", torch.linalg, _callables(torch.linalg, ["vector_norm", "norm"]))
        tensor_names = [
            "__sub__", "__eq__", "abs", "max", "min", "sum", "double", "float", "to", "clone", "copy_",
            "contiguous", "reshape", "view", "stride", "data_ptr", "untyped_storage", "numel", "all", "any",
            "__bool__", "__float__", "item", "detach", "cpu", "numpy", "__repr__",
        ]  # fmt: skip
        self._add("torch.Tensor", torch.Tensor, {n: getattr(torch.Tensor, n) for n in tensor_names})
        if torch.cuda.is_available():
            self._add(
                "torch.cuda", torch.cuda, _callables(torch.cuda, ["synchronize", "current_stream", "Event"])
            )
            event = torch.cuda.Event
            self._add(
                "torch.cuda.Event",
                event,
                {n: getattr(event, n) for n in ("record", "elapsed_time", "synchronize")},
            )
        try:
            import triton.testing

            self._add(
                "triton.testing",
                triton.testing,
                _callables(triton.testing, ["do_bench", "do_bench_cudagraph"]),
            )
        except ImportError:
            pass
        for module in extra_modules:  # the harness's own: gate, stats, timing, timed_checks, ...
            self._add(module.__name__, module, _callables(module))
            # ...and the methods of the classes they define (a wrapped `_Runner.time_ab` could
            # shrink the candidate's timings without touching a module-level name).
            for name, cls in vars(module).items():
                if isinstance(cls, type) and cls.__module__ == module.__name__:
                    methods = {
                        k: v
                        for k, v in vars(cls).items()
                        if callable(v) or isinstance(v, (staticmethod, classmethod))
                    }
                    self._add(f"{module.__name__}.{name}", cls, methods)

    def _add(self, label: str, owner: Any, functions: dict[str, Any]) -> None:
        for name, value in functions.items():
            self.watched[f"{label}.{name}"] = (owner, name, value)

    def changed(self) -> list[str]:
        """What was replaced since the snapshot (each a dotted name)."""
        found = []
        for dotted, (owner, name, value) in self.watched.items():
            current = (
                owner.__dict__.get(name, getattr(owner, name, None))
                if isinstance(owner, type)
                else getattr(owner, name, None)
            )
            if current is not value:
                found.append(dotted)
        return found


class ThreadWatch:
    """Threads alive before the candidate ran: any other one alive after a call is its doing."""

    def __init__(self) -> None:
        self.known = {t.ident for t in threading.enumerate()}

    def leftovers(self) -> list[str]:
        return [
            f"{t.name} (daemon={t.daemon})"
            for t in threading.enumerate()
            if t.ident not in self.known and t.is_alive() and not _library_thread(t)
        ]


def _library_thread(thread: threading.Thread) -> bool:
    """A thread torch or Triton started for itself (e.g. a compile pool), not the candidate."""
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", "") or ""
    return module.startswith(("torch.", "triton.")) and module != "torch.cuda"


class StreamWatch:
    """CUDA streams created while the candidate runs (GPU only; a no-op elsewhere)."""

    def __init__(self) -> None:
        self.created = 0
        self.enabled = False
        self.suspended = False
        try:
            import torch

            if not torch.cuda.is_available():
                return
            stream_cls = torch.cuda.Stream
            original_new = stream_cls.__new__
            watch = self

            def new(cls: Any, *args: Any, **kwargs: Any) -> Any:
                if not watch.suspended:
                    watch.created += 1
                return original_new(cls, *args, **kwargs)

            stream_cls.__new__ = new  # type: ignore[method-assign]
            self.default = torch.cuda.current_stream()
            self.enabled = True
        except Exception:  # no CUDA build: nothing to watch
            self.enabled = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The harness's own streams (CUDA-graph capture) are not counted."""
        self.suspended = True
        try:
            yield
        finally:
            self.suspended = False

    def problems(self) -> list[str]:
        if not self.enabled:
            return []
        import torch

        found = []
        if self.created:
            found.append(
                f"created {self.created} CUDA stream(s): work on a side stream escapes the timed region"
            )
        if torch.cuda.current_stream() != self.default:
            found.append("left a non-default CUDA stream current after its call")
        return found


class Guard:
    """All the watches together, set up before the candidate module is imported."""

    def __init__(self, harness_modules: list[types.ModuleType]) -> None:
        self.launches = LaunchCounter()
        self.launches.install()
        self.threads = ThreadWatch()
        self.streams = StreamWatch()
        self.tamper = Tamper(harness_modules)

    def check(self, when: str) -> str | None:
        """A named cheat found now, or None. `when` says at which point (for the message)."""
        replaced = self.tamper.changed() + self.launches.intact()
        if replaced:
            shown = ", ".join(replaced[:5]) + (f" and {len(replaced) - 5} more" if len(replaced) > 5 else "")
            return f"{when}, the candidate had replaced {shown} (the harness's clocks and checks must stay)"
        threads = self.threads.leftovers()
        if threads:
            return f"{when}, thread(s) started by the candidate were still running: {', '.join(threads[:3])}"
        streams = self.streams.problems()
        if streams:
            return f"{when}, the candidate {'; '.join(streams)}"
        if self.streams.enabled and self.launches.streams - {self.streams.default.cuda_stream}:
            return (
                f"{when}, the candidate launched Triton kernels on a side stream (escapes the timed region)"
            )
        return None
