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
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

SpotKind = Literal["launch", "grid", "autotune", "constant", "default"]
# triton.Config keyword arguments that are compile options rather than kernel meta-parameters
CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_PLACEHOLDER = "\x00META"


@dataclass(frozen=True)
class Spot:
    """One meta-parameter value in a file: what it is, its value, and where it is."""

    key: str
    label: str
    kind: SpotKind
    kernel: str | None
    value: str  # normalised source text (ast.unparse)
    line: int  # 0-based
    character: int  # 0-based code-point column where the value starts
    end_line: int
    end_character: int


@dataclass(frozen=True)
class SourceFacts:
    """Everything the history features need from one kernel.py text."""

    fingerprint: str | None  # None when the text does not parse
    skeleton: str | None
    meta: tuple[tuple[str, str], ...] = ()  # (spot label, literal) of every masked literal, in order
    spots: tuple[Spot, ...] = ()
    error: str | None = None
    kernels: tuple[str, ...] = field(default=())


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


class _Columns:
    """ast columns are UTF-8 byte offsets; editors want characters."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines()

    def char(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


_Launches = list[tuple[ast.Call, "int | None"]]
_Assignments = dict[int, dict[str, list[tuple[int, ast.expr]]]]


class _Analyzer:
    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.columns = _Columns(source)
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
        launches, assignments, functions = self._collect()
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

    def _collect(self) -> tuple[_Launches, _Assignments, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
        """One walk: every launch with the function it is in, each function's simple
        assignments (name -> [(line, value)]), and the functions."""
        launches: _Launches = []
        assignments: _Assignments = {}
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

        def walk(node: ast.AST, function: int | None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.append(child)
                    walk(child, id(child))
                    continue
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Subscript):
                    launches.append((child, function))
                elif function is not None and isinstance(child, (ast.Assign, ast.AnnAssign)):
                    target, value = _simple_assignment(child)
                    if target is not None and value is not None:
                        assignments.setdefault(function, {}).setdefault(target, []).append(
                            (child.lineno, value)
                        )
                walk(child, function)

        walk(self.tree, None)
        return launches, assignments, functions

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


def _serialize(tree: ast.AST, masked: dict[int, str]) -> tuple[str, str, list[tuple[str, str]]]:
    """(full form, skeleton, masked literals) of a tree: docstrings and bare string
    statements dropped, positions ignored, masked literals replaced in the skeleton."""
    full: list[str] = []
    skeleton: list[str] = []
    meta: list[tuple[str, str]] = []

    def emit(text: str) -> None:
        full.append(text)
        skeleton.append(text)

    def visit(node: object) -> None:
        if isinstance(node, ast.AST):
            if isinstance(node, ast.Constant):
                text = repr(node.value)
                full.append(text)
                label = masked.get(id(node))
                if label is None:
                    skeleton.append(text)
                else:
                    skeleton.append(_PLACEHOLDER)
                    meta.append((label, text))
                return
            emit(type(node).__name__ + "(")
            for name in node._fields:
                value = getattr(node, name, None)
                if name in ("ctx", "type_comment", "kind"):
                    continue
                if isinstance(value, list):
                    emit("[")
                    for item in value:
                        if (
                            isinstance(item, ast.Expr)
                            and isinstance(item.value, ast.Constant)
                            and isinstance(item.value.value, str)
                        ):
                            continue  # a docstring or a bare string: documentation, not code
                        visit(item)
                        emit(",")
                    emit("]")
                else:
                    visit(value)
                emit(";")
            emit(")")
        else:
            emit(repr(node))

    visit(tree)
    return "".join(full), "".join(skeleton), meta


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def analyze_source(source: str) -> SourceFacts:
    """Fingerprint, skeleton and spots of a kernel.py text (never raises)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return SourceFacts(fingerprint=None, skeleton=None, error=f"{message}{where}")
    analyzer = _Analyzer(source, tree)
    analyzer.run()
    full, skeleton, meta = _serialize(tree, analyzer.masked)
    return SourceFacts(
        fingerprint=_digest(full),
        skeleton=_digest(skeleton),
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


FACTS = FactsCache()
