"""Workspace kinds: the one rule that says which kind a folder is, and which adapter
(`kernelscope.kernels.adapters`) reads its problem.

Both processes ask this module and nothing else: the daemon for the kind it shows (and the
adapter it names to the benchmark child), the child for the adapter when it is run by hand.
The rule reads only which files exist and the names the reference module defines at top level
(by AST, never imported), so it costs no torch and runs no workspace code.

Kinds are tried in order; the first whose rule matches is the folder's kind. A kind without an
adapter of its own (a workspace measured by its own gate command, such as atrex v0.1's) is read
by the adapter of the first later kind that matches, i.e. by the contract its reference file
follows. A kind with an evaluator of its own (`OwnGate`: Atrex-Bench's `test_kernel.py`) is
measured by that evaluator alone, its default gate command when none is named. A new kind is
one adapter module plus one `register(KindSpec(...))`, called by the module that defines it or
named by an entry point in the `kernelscope.workspace_kinds` group.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kernelscope.protocol import workspace_files
from kernelscope.protocol.sol_solution import framework_solution as sol_framework
from kernelscope.protocol.text_positions import python_text

ENTRY_POINT_GROUP = "kernelscope.workspace_kinds"


@dataclass
class Folder:
    """What the rule may look at: the files of `root`, the top-level names of the reference
    module, and two facts of the README that only the daemon parses (the child leaves them
    False: they choose between kinds that share one adapter)."""

    root: Path
    reference: Path | None = None
    machine_block: bool = False
    stop_conditions: bool = False
    parse_limit: int | None = None  # bytes: a larger reference module is not parsed (no names)

    def has(self, *names: str) -> bool:
        return all((self.root / name).is_file() for name in names)

    def has_dir(self, name: str) -> bool:
        return (self.root / name).is_dir()

    @cached_property
    def reference_source(self) -> str | None:
        """The reference module's text (None: unreadable, or larger than `parse_limit`)."""
        path = self.reference if self.reference is not None else self.root / "reference.py"
        try:
            if self.parse_limit is not None and path.stat().st_size > self.parse_limit:
                return None
            return workspace_files.read_text(path, errors="replace")
        except (OSError, ValueError):
            return None

    @cached_property
    def reference_names(self) -> frozenset[str]:
        """Names the reference module defines at top level (empty when unreadable)."""
        text = self.reference_source
        try:
            tree = ast.parse(python_text(text)) if text is not None else None
        except (SyntaxError, ValueError):
            tree = None
        if tree is None:
            return frozenset()
        names: set[str] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
        return frozenset(names)

    def defines(self, *names: str) -> bool:
        """Every name defined at the module's top level. A name its text does not hold is
        defined nowhere in it: no parse then (`problem_in` asks this of many modules)."""
        text = self.reference_source
        if text is None or not all(name in text for name in names):
            return False
        return set(names) <= self.reference_names

    @property
    def parsed_bytes(self) -> int:
        """The bytes of the reference module parsed so far (0: not parsed)."""
        if "reference_names" not in self.__dict__ or self.reference_source is None:
            return 0
        return len(self.reference_source.encode("utf-8", errors="replace"))


@dataclass(frozen=True)
class OwnGate:
    """The evaluator a kind ships in its workspaces, which measures it instead of kernelscope's
    harness: the gate command run when neither `--gate-command` nor the README's block names
    one and its script exists, what the evaluator calls in the candidate and what its speedups
    are against, the ignored runtime it reads (copied into the scratch copy it runs in), and
    why it cannot run in a given folder (None: it can)."""

    command: str
    script: str
    entry_point: str
    baseline: str
    runtime: tuple[str, ...] = ()
    unavailable: Callable[[Folder], str | None] = field(default=lambda _folder: None, compare=False)


@dataclass(frozen=True)
class KindSpec:
    """One workspace kind: its rule, how it is measured (said to the user), the adapter the
    benchmark child loads (`module:Class`, or None: the contract of its reference file), and
    the goal it has when its README states none, and its own evaluator when it has one.
    `framework` says why a folder's solution is declared in a framework rather than Triton
    (None: a Triton kernel is asked of it, the default): the static rules about PyTorch
    instead of Triton and the runtime "no Triton, no score" are then off, as for a file
    marked `# kernelscope: framework-baseline`. `problem` names a folder of the kind in words
    ("a SOL-ExecBench problem"; None: the kind's name), as the not-a-workspace error says it.
    `latency_geomean`: its one latency figure is the geomean over the workloads (atrex's
    evaluators for the kind write `performance.latency_us` so, with `latency_us_geomean` beside
    it), else the slowest configuration's (the largest workload)."""

    name: str
    matches: Callable[[Folder], bool] = field(compare=False)
    harness: str
    adapter: str | None = None
    goal: str | None = None
    own_gate: OwnGate | None = None
    framework: Callable[[Folder], str | None] = field(default=lambda _folder: None, compare=False)
    problem: str | None = None
    latency_geomean: bool = False


_ADAPTERS = "kernelscope.kernels.adapters"
SOL_EXECBENCH = KindSpec(
    name="sol-execbench",
    matches=lambda f: f.has("definition.json", "workload.jsonl"),
    harness="SOL-ExecBench adapter: one configuration per workload.jsonl line, destination-passing "
    "run(*inputs, *outputs), the workloads' own tolerances",
    adapter=f"{_ADAPTERS}.sol_execbench:SolExecBenchProblem",
    goal="minimize the geomean latency over the workloads",
    framework=lambda f: sol_framework(f.root),  # solution.json's spec.languages
    problem="a SOL-ExecBench problem",
    latency_geomean=True,  # atrex reference/test_kernel.py _record_memory
)
# A generalized (production) Atrex-Bench workspace shows only agent_problem.json: the exact
# cases (shapes.json, metadata.json) exist only in atrex's sandbox, and test_kernel.py reads them.
GENERALIZED_ATREX_BENCH = (
    "this is a generalized (production) Atrex-Bench workspace: agent_problem.json is its public "
    "contract and the exact evaluator cases (shapes.json, metadata.json) are private to atrex's "
    "sandbox, so its test_kernel.py cannot run here; nothing was run. An explicit --gate-command "
    "still runs (e.g. an evaluator pointed at a private reference)"
)
ATREX_BENCH = KindSpec(
    name="atrex-bench",
    matches=lambda f: f.has("agent_problem.json") or f.has("shapes.json", "input.py"),
    harness="the workspace's own evaluator (python test_kernel.py --no-memory, the official "
    "Atrex-Bench run_eval) as the gate, one configuration per shapes.json entry; kernelscope's "
    "harness does not run it",
    own_gate=OwnGate(
        command="python test_kernel.py --no-memory",
        script="test_kernel.py",
        entry_point="Model",  # the candidate kernel.py exposes class Model, as reference.py does
        baseline="metadata.json",  # speedups vs each shape's production_performance.performance_us
        # what atrex copies from the Atrex-Bench checkout and gitignores (/atrex-bench)
        runtime=("atrex-bench/scripts/run_eval.py", "atrex-bench/src/atrex_bench"),
        unavailable=lambda f: (
            GENERALIZED_ATREX_BENCH if f.has("agent_problem.json") and not f.has("shapes.json") else None
        ),
    ),
    problem="an Atrex-Bench problem",
    latency_geomean=True,  # atrex orchestrator/session_io.py (its evaluator's latency_us_geomean)
)
KERNELBENCH = KindSpec(
    name="kernelbench",
    matches=lambda f: f.defines("Model", "get_inputs"),
    harness="KernelBench contract: Model/get_inputs/get_init_inputs vs ModelNew",
    adapter=f"{_ADAPTERS}.kernelbench:KernelBenchProblem",
    problem="a KernelBench problem",
)
NATIVE = KindSpec(
    name="native",
    matches=lambda f: f.defines("CONFIGS", "make_inputs", "reference") or f.machine_block,
    harness="kernelscope's contract: reference.py with CONFIGS, make_inputs, reference",
    adapter=f"{_ADAPTERS}.native:NativeProblem",
    problem="a problem in kernelscope's own contract (reference.py with CONFIGS, make_inputs, reference)",
)
ATREX_V01 = KindSpec(
    name="atrex-v0.1",
    matches=lambda f: f.has_dir("memory") or f.stop_conditions,
    harness="the workspace's own gate command (test_kernel.py); timing needs a reference.py",
)

_kinds: list[KindSpec] = [SOL_EXECBENCH, ATREX_BENCH, KERNELBENCH, NATIVE, ATREX_V01]
FALLBACK = NATIVE  # a folder no rule matches is read by kernelscope's own contract
_guard = threading.Lock()
_entry_points_loaded = False


def register(spec: KindSpec, before: str | None = None) -> None:
    """Add a kind, tried before the kind named `before` (default: before every built-in one,
    since a new kind is usually recognised by files of its own). Registering a name again
    replaces it."""
    with _guard:
        _kinds[:] = [k for k in _kinds if k.name != spec.name]
        names = [k.name for k in _kinds]
        index = names.index(before) if before in names else 0
        _kinds.insert(index, spec)


def unregister(name: str) -> None:
    with _guard:
        _kinds[:] = [k for k in _kinds if k.name != name]


def _load_entry_points() -> None:
    """Kinds that installed packages declare (`[project.entry-points."kernelscope.workspace_kinds"]`
    naming a KindSpec), loaded once, on the first question."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        spec = point.load()
        if isinstance(spec, KindSpec):
            register(spec)


def kinds() -> list[KindSpec]:
    """Every kind, in the order the rule tries them."""
    _load_entry_points()
    with _guard:
        return list(_kinds)


def kind_names() -> list[str]:
    return [k.name for k in kinds()]


def spec_of(name: str) -> KindSpec:
    for spec in kinds():
        if spec.name == name:
            return spec
    raise KeyError(f"unknown workspace kind {name!r} (known: {', '.join(kind_names())})")


def detect(folder: Folder) -> KindSpec:
    """The folder's kind: the first kind whose rule matches."""
    for spec in kinds():
        if spec.matches(folder):
            return spec
    return FALLBACK


def problem_of(folder: Folder) -> tuple[str, bool] | None:
    """What a folder that is no workspace looks like, in words, and whether `kernelscope bench`
    measures it as it is (a kind whose own evaluator cannot run there: not), or None when no
    kind's rule matches it (the fallback is no recognition). Reads what `detect` reads."""
    spec = detect(folder)
    if not spec.matches(folder):
        return None
    runs = spec.own_gate is None or spec.own_gate.unavailable(folder) is None
    return spec.problem or f"a {spec.name} problem", runs


# The most modules of a bare folder read as its reference by `problem_in` (an error path's
# courtesy), and the most bytes of them it parses: a module is parsed only when its text holds
# the names a kind's rule asks for (`Folder.defines`), and forty 256 KB modules took 7-9 s
PROBLEM_MODULES_READ = 32
PROBLEM_BYTES_PARSED = 1024 * 1024


def problem_in(root: Path, parse_limit: int | None = None) -> tuple[str, bool, str | None] | None:
    """`problem_of` a bare folder (no README block to name its reference): read with reference.py,
    or, where there is none, with each other module beside kernel.py (the candidate) as the
    reference, the first a kind's rule recognises: KernelBench keeps a problem's own file name
    (level1/26_GELU_.py). The third item names that module (None: reference.py), which
    `kernelscope bench` measures only when told (--reference)."""
    folder = Folder(root, parse_limit=parse_limit)
    found = problem_of(folder)
    if found is not None or (root / "reference.py").is_file():
        return None if found is None else (*found, None)
    budget = PROBLEM_BYTES_PARSED - folder.parsed_bytes
    modules = sorted(p for p in root.glob("*.py") if p.name != "kernel.py" and p.is_file())
    for module in modules[:PROBLEM_MODULES_READ]:
        if budget <= 0:
            break
        folder = Folder(root, reference=module, parse_limit=min(budget, parse_limit or budget))
        found = problem_of(folder)
        if found is not None:
            return (*found, module.name)
        budget -= folder.parsed_bytes
    return None


def framework_solution(folder: Folder, kind: str | None = None) -> str | None:
    """Why the folder's solution is declared in a framework rather than Triton (KindSpec's
    `framework`), asked of `kind` (default: the folder's own kind); None: Triton is asked."""
    spec = detect(folder) if kind is None else next((k for k in kinds() if k.name == kind), None)
    return spec.framework(folder) if spec is not None else None


def adapter_for(folder: Folder) -> str:
    """The adapter that reads the folder's problem: its kind's, or that of the first later
    kind that matches and has one (module docstring)."""
    for spec in kinds():
        if spec.adapter is not None and spec.matches(folder):
            return spec.adapter
    assert FALLBACK.adapter is not None
    return FALLBACK.adapter
