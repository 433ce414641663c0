"""What one kernel.py text holds for the history features, by `ast` alone (never imported).

One parse gives three things, cached by content so each version's file is analysed once:
- the *fingerprint*: a hash of the syntax tree without comments, whitespace and docstrings,
  so reformatting a file does not make it "new" and an identical kernel is recognised;
- the *skeleton*: the same hash with the meta-parameter literals masked (launch keywords,
  grid expressions, `triton.Config` values, module-level UPPER_CASE constants, constexpr
  defaults) plus the masked values in order, so "the same kernel with BLOCK_SIZE 2048" is a
  near match whose differences can be named;
- the *spots*: where each meta-parameter value sits (line, column) and under which key it is
  the same spot in another version (`launch:add_kernel#0:BLOCK_SIZE`, `grid:add_kernel#0`,
  `autotune:matmul_kernel:BLOCK_M`, `const:BLOCK_M`, `default:kernel:BLOCK`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import hashlib
import marshal
import os
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from kernelscope.protocol.text_positions import Columns, python_text

SpotKind = Literal["launch", "grid", "autotune", "constant", "default"]
# triton.Config keyword arguments that are compile options rather than kernel meta-parameters
CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_PLACEHOLDER = "\x00META"


class Spot(NamedTuple):
    """One meta-parameter value in a file: what it is, its value, and where it is (interned:
    see `intern_spot`)."""

    key: str
    label: str
    kind: SpotKind
    kernel: str | None
    value: str  # normalised source text (ast.unparse)
    line: int  # 0-based
    character: int  # 0-based code-point column where the value starts
    end_line: int
    end_character: int


_SPOTS: dict[Spot, Spot] = {}
_SPOTS_LIMIT = 1_000_000


def intern_spot(spot: Spot) -> Spot:
    """One object per distinct spot: consecutive versions share almost all of theirs, and a
    thousand versions would otherwise keep a hundred thousand equal tuples for the collector
    to walk."""
    found = _SPOTS.get(spot)
    if found is not None:
        return found
    if len(_SPOTS) >= _SPOTS_LIMIT:
        _SPOTS.clear()
    _SPOTS[spot] = spot
    return spot


@dataclass(frozen=True)
class SourceFacts:
    """Everything the history features need from one kernel.py text."""

    fingerprint: str | None  # None when the text does not parse
    skeleton: str | None
    meta: tuple[tuple[str, str], ...] = ()  # (spot label, literal) of every masked literal, in order
    spots: tuple[Spot, ...] = ()
    error: str | None = None
    kernels: tuple[str, ...] = field(default=())

    @functools.cached_property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Each distinct (spot key, value), in file order: what a version used where."""
        return tuple(dict.fromkeys((spot.key, spot.value) for spot in self.spots))


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, str, bool)) and node.value is not None
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and _is_literal(node.operand)
    )


def _callee_name(node: ast.expr) -> str | None:
    """`add_kernel` for `add_kernel`, `mod.add_kernel` or `self.add_kernel`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_config_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _callee_name(node.func) == "Config"


def _is_constant_name(name: str) -> bool:
    letters = [c for c in name if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters)


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return text.endswith("constexpr")


_Launches = list[tuple[ast.Call, "int | None"]]
_Assignments = dict[int, dict[str, list[tuple[int, ast.expr]]]]


class _Analyzer:
    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.columns = Columns(source)
        self.spots: list[Spot] = []
        self.masked: dict[int, str] = {}  # id(literal node) -> spot label
        self.spot_nodes: set[int] = set()
        self.kernels: list[str] = []
        self.module_consts: dict[str, ast.expr] = {}
        self.module_const_targets: dict[str, ast.AST] = {}

    # -- helpers ----------------------------------------------------------------------
    def _add(self, key: str, label: str, kind: SpotKind, kernel: str | None, node: ast.expr) -> None:
        if id(node) in self.spot_nodes:
            return  # one value, one spot (a launch keyword naming a constant owns the constant)
        self.spot_nodes.add(id(node))
        end_line = node.end_lineno or node.lineno
        self.spots.append(
            intern_spot(
                Spot(
                    key=key,
                    label=label,
                    kind=kind,
                    kernel=kernel,
                    value=ast.unparse(node),
                    line=node.lineno - 1,
                    character=self.columns.char(node.lineno, node.col_offset),
                    end_line=end_line - 1,
                    end_character=self.columns.char(end_line, node.end_col_offset or node.col_offset),
                )
            )
        )
        self._mask(node, label)

    def _mask(self, node: ast.AST, label: str) -> None:
        for child in ast.walk(node):
            # A signed literal keeps its sign in the skeleton; its operand is masked.
            if isinstance(child, ast.Constant) and _is_literal(child):
                self.masked.setdefault(id(child), label)

    # -- analysis ---------------------------------------------------------------------
    def run(self) -> None:
        for statement in self.tree.body:
            target, value = _simple_assignment(statement)
            if target is not None and value is not None and _is_literal(value):
                annotation = statement.annotation if isinstance(statement, ast.AnnAssign) else None
                if _is_constant_name(target) or _is_constexpr(annotation):
                    self.module_consts[target] = value
        walk = _Pass()
        walk.visit(self.tree, None)
        self.walk = walk
        launches, assignments, functions = walk.launches, walk.assignments, walk.functions
        for function in functions:
            if any(
                _callee_name(_decorator_func(d)) in ("jit", "autotune", "heuristics")
                for d in function.decorator_list
            ):
                self.kernels.append(function.name)
                self._defaults(function)
                self._autotune(function)
        self._launches(launches, assignments)
        self._module_autotune_lists()
        for name, value in self.module_consts.items():
            self._add(f"const:{name}", name, "constant", None, value)

    def _defaults(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = function.args
        positional = arguments.posonlyargs + arguments.args
        defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        pairs = list(zip(positional, defaults, strict=True)) + list(
            zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        )
        for argument, default in pairs:
            if default is not None and _is_constexpr(argument.annotation):
                self._add(
                    f"default:{function.name}:{argument.arg}", argument.arg, "default", function.name, default
                )

    def _autotune(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in function.decorator_list:
            if isinstance(decorator, ast.Call) and _callee_name(decorator.func) == "autotune":
                for node in ast.walk(decorator):
                    if _is_config_call(node):
                        self._config(node, function.name)  # type: ignore[arg-type]

    def _module_autotune_lists(self) -> None:
        """Config lists assigned at module level (`configs = [triton.Config(...), ...]`)."""
        for statement in self.tree.body:
            target, value = _simple_assignment(statement)
            if target is None or value is None:
                continue
            for node in ast.walk(value):
                if _is_config_call(node):
                    self._config(node, target)  # type: ignore[arg-type]

    def _config(self, call: ast.Call, owner: str) -> None:
        if call.args and isinstance(call.args[0], ast.Dict):
            for key, value in zip(call.args[0].keys, call.args[0].values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self._add(f"autotune:{owner}:{key.value}", key.value, "autotune", owner, value)
        for keyword in call.keywords:
            if keyword.arg:
                self._add(f"autotune:{owner}:{keyword.arg}", keyword.arg, "autotune", owner, keyword.value)

    def _launches(self, launches: _Launches, assignments: _Assignments) -> None:
        """`kernel[grid](..., KW=value, num_warps=...)`, in source order, per callee."""
        launches.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        occurrences: dict[str, int] = {}
        for call, function in launches:
            subscript = call.func
            assert isinstance(subscript, ast.Subscript)
            callee = _callee_name(subscript.value)
            if callee is None:
                continue
            index = occurrences.get(callee, 0)
            occurrences[callee] = index + 1
            local = assignments.get(function, {}) if function is not None else {}
            grid = self._resolve(subscript.slice, local, call.lineno)
            self._add(f"grid:{callee}#{index}", "grid", "grid", callee, grid)
            for keyword in call.keywords:
                if keyword.arg is None:
                    continue
                value = self._resolve(keyword.value, local, call.lineno)
                self._add(f"launch:{callee}#{index}:{keyword.arg}", keyword.arg, "launch", callee, value)

    def _resolve(
        self, node: ast.expr, local: dict[str, list[tuple[int, ast.expr]]], before_line: int
    ) -> ast.expr:
        """A name bound to a value in the launching function (the last binding before the
        launch) or to a module constant stands for that value: the spot is where it is set."""
        if not isinstance(node, ast.Name):
            return node
        earlier = [(line, value) for line, value in local.get(node.id, ()) if line < before_line]
        if earlier:
            return max(earlier, key=lambda item: item[0])[1]
        return self.module_consts.get(node.id, node)


def _decorator_func(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def _simple_assignment(statement: ast.AST) -> tuple[str | None, ast.expr | None]:
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return statement.targets[0].id, statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id, statement.value
    return None, None


_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "kind"})
_FIELDS: dict[type, tuple[str, ...]] = {}
_SEPARATOR = "\x1f"


def _fields_of(cls: type) -> tuple[str, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in cls._fields if f not in _SKIPPED_FIELDS)  # type: ignore[attr-defined]
    return found


class _Pass:
    """One walk over the tree: its serialised form (positions, contexts, docstrings and bare
    strings left out; each constant's place recorded so the skeleton can mask it later) and
    what the spot analysis needs (functions, launches, each function's assignments)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.constants: list[tuple[int, int]] = []  # (index in out, id(node))
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.launches: _Launches = []
        self.assignments: _Assignments = {}

    def visit(self, node: ast.AST, function: int | None) -> None:
        cls = node.__class__
        out = self.out
        if cls is ast.Constant:
            self.constants.append((len(out), id(node)))
            out.append(repr(node.value))  # type: ignore[attr-defined]
            return
        out.append(cls.__name__)
        if cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
            self.functions.append(node)  # type: ignore[arg-type]
            function = id(node)
        elif cls is ast.Call:
            if node.func.__class__ is ast.Subscript:  # type: ignore[attr-defined]
                self.launches.append((node, function))  # type: ignore[arg-type]
        elif function is not None and (cls is ast.Assign or cls is ast.AnnAssign):
            target, value = _simple_assignment(node)
            if target is not None and value is not None:
                self.assignments.setdefault(function, {}).setdefault(target, []).append(
                    (node.lineno, value)  # type: ignore[attr-defined]
                )
        for name in _fields_of(cls):
            value = getattr(node, name, None)
            if value.__class__ is list:
                out.append("[")
                for item in value:
                    if isinstance(item, ast.AST):
                        if (
                            item.__class__ is ast.Expr
                            and item.value.__class__ is ast.Constant
                            and item.value.value.__class__ is str
                        ):
                            continue  # a docstring or a bare string: documentation, not code
                        self.visit(item, function)
                    else:
                        out.append(repr(item))
                out.append("]")
            elif isinstance(value, ast.AST):
                self.visit(value, function)
            else:
                out.append(repr(value))
        out.append(")")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@contextlib.contextmanager
def no_gc_pauses() -> Iterator[None]:
    """Hold the cyclic garbage collector while a burst of short-lived objects is made.

    A parse allocates tens of thousands of AST nodes; in a daemon that holds a large history
    each of them counts towards a full collection, which then walks every object the daemon
    keeps (a 100-300 ms pause on the editor's request). The nodes die by reference counting;
    collection resumes, with the old state restored, as soon as the burst is over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyze_source(source: str) -> SourceFacts:
    """Fingerprint, skeleton and spots of a kernel.py text (never raises)."""
    with no_gc_pauses():
        return _analyze(source)


def _analyze(source: str) -> SourceFacts:
    source = python_text(source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return SourceFacts(fingerprint=None, skeleton=None, error=f"{message}{where}")
    analyzer = _Analyzer(source, tree)
    analyzer.run()
    full = analyzer.walk.out
    skeleton = list(full)
    meta: list[tuple[str, str]] = []
    for index, node_id in analyzer.walk.constants:
        label = analyzer.masked.get(node_id)
        if label is not None:
            meta.append((label, full[index]))
            skeleton[index] = _PLACEHOLDER
    return SourceFacts(
        fingerprint=_digest(_SEPARATOR.join(full)),
        skeleton=_digest(_SEPARATOR.join(skeleton)),
        meta=tuple(meta),
        spots=tuple(sorted(analyzer.spots, key=lambda s: (s.line, s.character))),
        kernels=tuple(analyzer.kernels),
    )


def content_key(text: str) -> str:
    """The cache key of a text that is not a git blob (the editor's buffer, a patched file)."""
    return "text:" + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class FactsCache:
    """Analyses by content hash: a version's kernel.py is parsed once per process, whatever
    the number of histories (and daemons' workspaces) that hold it."""

    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, SourceFacts] = OrderedDict()

    def get(self, source: str, key: str | None = None) -> SourceFacts:
        key = key or content_key(source)
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
            return found
        facts = analyze_source(source)
        self._items[key] = facts
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return facts

    def known(self, key: str) -> SourceFacts | None:
        return self._items.get(key)

    def put(self, key: str, facts: SourceFacts) -> None:
        self._items[key] = facts
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)

    # -- git blobs: content-addressed, so their analysis is kept on disk between processes --
    def load_blob(self, blob: str) -> SourceFacts | None:
        """A blob's facts from the on-disk cache (None when absent, stale or unreadable)."""
        path = _disk_path(blob)
        if path is None:
            return None
        try:
            data = marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return None
        if not isinstance(data, tuple) or len(data) != 7 or data[0] != DISK_FORMAT:
            return None
        _, fingerprint, skeleton, meta, spots, error, kernels = data
        facts = SourceFacts(
            fingerprint, skeleton, meta, tuple(intern_spot(Spot._make(s)) for s in spots), error, kernels
        )
        self.put("blob:" + blob, facts)
        return facts

    def analyze_blob(self, blob: str, text: str) -> SourceFacts:
        """Analyse a blob's text, remember it here and on disk."""
        facts = self.get(text, "blob:" + blob)
        path = _disk_path(blob)
        if path is not None:
            payload = (
                DISK_FORMAT,
                facts.fingerprint,
                facts.skeleton,
                facts.meta,
                tuple(tuple(s) for s in facts.spots),
                facts.error,
                facts.kernels,
            )
            with contextlib.suppress(OSError, ValueError):
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                temporary.write_bytes(marshal.dumps(payload))
                os.replace(temporary, path)
        return facts


DISK_FORMAT = 1  # bump when SourceFacts or the analysis changes: old entries are ignored
CACHE_ENV = "KERNELSCOPE_HISTORY_CACHE"  # a folder, or "off"


def _disk_path(blob: str) -> Path | None:
    """Where a blob's facts are kept: $KERNELSCOPE_HISTORY_CACHE, else
    $XDG_CACHE_HOME/kernelscope/history-facts (~/.cache/...). Never inside a workspace."""
    configured = os.environ.get(CACHE_ENV)
    if configured == "off" or not blob.isalnum():
        return None
    if configured:
        base = Path(configured)
    else:
        base = (
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelscope" / "history-facts"
        )
    return base / f"v{DISK_FORMAT}" / blob[:2] / blob


FACTS = FactsCache()
