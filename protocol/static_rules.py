"""Static cheat checks for a candidate kernel file: its source is parsed with `ast`, never run.

The editor runs this as the user types, so it reads text only (no torch, no triton, no import
of the candidate), never raises (a file that does not parse has no findings: the editor shows
syntax errors itself) and walks the tree once. It is the editor-time counterpart of
`kernelscope.kernels.integrity`, which watches a running candidate: a static rule can be fooled
(`exec`, a computed `getattr`), so the runtime checks stay the authority.

The KernelBench rules follow upstream's `kernel_static_checker.py` (ScalingIntelligence/
KernelBench, commit 423217d, `validate_kernel_static`), with its default severities: the
checks in its `STRICT_CHECKS` (plus the backend check, `triton_impl`) are errors, those in
`WARNING_CHECKS` are warnings. Upstream matches regexes over comment-stripped text; here each
rule is a question about the syntax tree, which removes upstream's big sources of false
positives: `code_bypass` flags *any* `try:` or `pass` (an `except ImportError` around an
import, an empty `__init__`), and a pattern inside a string or a longer name matches too.
Names are resolved through the file's imports (`import torch.nn.functional as F`), which also
finds what upstream misses (`F.silu`; `from torch import matmul`).

Upstream checks not ported, and why:

- `cuda_impl`, `hip_impl`, `tk_impl`, `cute_impl`, `tilelang_impl`: backend checks for other
  DSLs. kernelscope's candidates are Triton; a Triton candidate that builds CUDA C++ (or CuPy,
  Numba...) kernels instead gets the `foreign-kernel` warning here.
- `precision_downgrade`: it only fires when the required precision is fp32, which a source
  file does not state (upstream's default precision, fp16, turns it off), and the bench gate
  compares every output with the reference at the problem's tolerance anyway.

The rules upstream lacks (caches across calls, torch.compile, the reference, the harness,
monkey patches) are kernelscope's own. Rules about PyTorch instead of Triton (upstream runs `triton_impl`
for backend "triton" only) are off in a `# kernelscope: framework-baseline` file or a non-Triton solution.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from kernelscope.protocol.text_positions import Columns, python_text

__all__ = ["FRAMEWORK_BASELINE_MARK", "RULES", "Finding", "check_source"]


@dataclass(frozen=True)
class Finding:
    """One rule hit, positioned for an editor diagnostic (1-based lines, 0-based columns in chars)."""

    rule: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    severity: str  # "error": the bench gate fails on it; "warning": flagged, not failed
    source: str  # "kernelbench": upstream's rule; "kernelscope": our own


_KB, _KS = "kernelbench", "kernelscope"
_PYTORCH = "PyTorch computes this, not a custom kernel"
# rule id -> (severity, source, description for docs, why: the second half of each message)
_RULES: dict[str, tuple[str, str, str, str]] = {
    "torch-fallback-in-except": (
        "error", _KB, "An except/finally branch runs PyTorch compute or the reference (upstream "
        "`code_bypass`, try-except fallback).",
        "a candidate whose kernel fails silently runs PyTorch instead (KernelBench rejects this)"),
    "inheritance-bypass": (
        "error", _KB, "ModelNew is, or inherits, the reference Model without a forward() of its own "
        "(upstream `code_bypass`, pass statement / inheritance bypass).",
        "the benchmark times the reference, not a kernel (KernelBench rejects inheritance bypass)"),
    "timing-event-patch": (
        "error", _KB, "Reassigns a clock, CUDA event or do_bench (upstream `timing_event_patch`).",
        "a patched clock or event fakes the benchmark's timings (KernelBench rejects timing patches)"),
    "thread-injection": (
        "error", _KB, "Imports or starts threads, processes or executors (upstream `thread_injection`).",
        "work on another thread or process escapes the timed region (KernelBench rejects threading)"),
    "lazy-eval": (
        "error", _KB, "Defines or builds a torch.Tensor subclass, a fake tensor (upstream `lazy_eval`).",
        "a lazy or fake tensor can pass the check without computing anything (KernelBench rejects it)"),
    "triton-impl": (
        "error", _KB, "No @triton.jit kernel, or kernels without tl.* ops (upstream `triton_impl`).",
        "whatever the candidate runs is not a Triton kernel (KernelBench's Triton backend requires one)"),
    "stream-injection": (
        "warning", _KB, "Creates, enters or syncs CUDA streams or graphs (upstream `stream_injection`).",
        "work on a side stream can escape the timed region on the default stream (KernelBench flags it)"),
    "pytorch-wrap": (
        "warning", _KB, "Uses a torch.nn compute layer such as nn.Linear (upstream `pytorch_wrap`).",
        "a torch.nn layer runs PyTorch, not a custom kernel (KernelBench allows only containers)"),
    "torch-computation-ops": (
        "warning", _KB, "Timed path calls an upstream-listed op or F.* (upstream `torch_computation_ops`).",
        f"{_PYTORCH} (KernelBench flags torch computation ops)"),
    "torch-op-in-timed-path": (
        "warning", _KS, "The timed entry point calls another torch compute op or a tensor math method "
        "(allocation and shape ops are fine).", f"{_PYTORCH}, inside the timed path"),
    "reference-call": (
        "error", _KS, "The candidate calls or re-exports the reference (Model, reference.py).",
        "the benchmark would time the reference, not a kernel"),
    "torch-compile": (
        "error", _KS, "Uses torch.compile, TorchDynamo, Inductor or TorchScript.",
        "Inductor would write the Triton kernels, so the benchmark measures PyTorch's compiler"),
    "monkey-patch": (
        "error", _KS, "Assigns, setattr()s or delattr()s an attribute of an imported module.",
        "patching a library changes what the reference and the harness run, not only this candidate"),
    "harness-tampering": (
        "error", _KS, "Reaches into the harness: kernelscope imports, sys.modules, builtins, stack "
        "frames, closures, gc.", "a candidate that can find the harness measuring it can rewrite it"),
    "timing-reference": (
        "warning", _KS, "Reads a clock, creates a torch.cuda.Event or calls do_bench.",
        "timing is the harness's job, and a candidate that reads the clock can act differently when timed"),
    "state-across-calls": (
        "warning", _KS, "The timed path keeps state between calls: a cache, a counter, lru_cache.",
        "an output kept from an earlier call can be returned instead of recomputed"),
    "global-state-change": (
        "warning", _KS, "Changes process-wide settings the reference also runs under (torch.backends, "
        "seeds, default dtype, os.environ).", "a process-wide setting also changes the reference run"),
    "foreign-kernel": (
        "warning", _KS, "Builds kernels outside Triton (load_inline, cpp_extension, CuPy, Numba, "
        "ctypes).", "kernels built outside Triton are launches kernelscope cannot count"),
    "dynamic-code": (
        "warning", _KS, "exec/eval/compile, or an import whose name is computed.",
        "code built at run time is invisible to these checks"),
}  # fmt: skip
RULES: dict[str, str] = {rule: spec[2] for rule, spec in _RULES.items()}

# A deliberate PyTorch baseline says so (the one pattern: the runner reads this one too).
FRAMEWORK_BASELINE_MARK = re.compile(r"^\s*#\s*kernelscope:\s*framework-baseline\b", re.M)
# What a framework baseline may do: use PyTorch instead of Triton.
_BASELINE_EXEMPT = frozenset({"torch-computation-ops", "torch-op-in-timed-path", "pytorch-wrap",
                              "triton-impl", "torch-compile", "torch-fallback-in-except"})  # fmt: skip


def _words(text: str, prefix: str = "") -> frozenset[str]:
    return frozenset(prefix + word for word in text.split())


# Names read as modules even without an import: upstream's snippets have none, and `F`, `nn`,
# `tl` are the usual spellings. A module-level variable of the same name shadows them.
_ALIASED_MODULES = "torch triton time threading multiprocessing asyncio sys gc os builtins"
_DEFAULT_ALIASES = {n: n for n in _ALIASED_MODULES.split()} | {"F": "torch.nn.functional", "nn": "torch.nn"}
_DEFAULT_ALIASES["tl"] = "triton.language"
# Upstream's TORCH_COMPUTATION_OPS, verbatim.
_UPSTREAM_TORCH_OPS = _words(
    "mm bmm matmul einsum conv1d conv2d conv3d conv conv_transpose1d conv_transpose2d "
    "conv_transpose3d avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d "
    "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d "
    "adaptive_max_pool2d adaptive_max_pool3d relu hardtanh elu selu leaky_relu gelu softsign softplus "
    "softmax log_softmax tanh sigmoid hardsigmoid silu mish batch_norm group_norm layer_norm "
    "instance_norm rms_norm normalize linear cross_entropy kl_div mse_loss huber_loss "
    "triplet_margin_loss cosine_similarity logsumexp clamp dropout",
    "torch.",
)
# torch.<name> calls that allocate, describe, reshape or configure rather than compute: a
# launcher legitimately calls them (torch.empty_like for its output, for one).
_TORCH_NOT_COMPUTE = _words(
    "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange tensor "
    "as_tensor from_numpy asarray device Size dtype finfo iinfo is_tensor is_floating_point "
    "is_complex numel get_default_dtype promote_types result_type can_cast broadcast_shapes no_grad "
    "inference_mode enable_grad set_grad_enabled is_grad_enabled _assert Generator manual_seed seed "
    "set_default_dtype set_default_device set_float32_matmul_precision get_float32_matmul_precision "
    "reshape flatten use_deterministic_algorithms squeeze unsqueeze permute transpose t narrow split "
    "chunk broadcast_to as_strided view_as_real view_as_complex cat stack compile",
    "torch.",
)
_NOT_COMPUTE_MODULES = (
    "cuda backends library utils testing jit _dynamo _inductor compiler autograd distributed"
)
_TORCH_NOT_COMPUTE_PREFIXES = tuple(f"torch.{module}." for module in f"{_NOT_COMPUTE_MODULES} random".split())
# Tensor methods that compute, on a receiver of unknown type (never a module or `self`).
_TENSOR_MATH_METHODS = _words(
    "matmul mm bmm mv addmm baddbmm softmax log_softmax relu relu_ gelu sigmoid tanh silu exp log sqrt "
    "rsqrt pow sum mean var std norm cumsum cumprod clamp clamp_ erf abs amax amin max min argmax argmin "
    "logsumexp prod"
)
# torch.nn names that are structure, not compute (upstream's PYTORCH_DISALLOWED_NN_PATTERN).
_NN_OK = _words(
    "Module ModuleList ModuleDict Parameter ParameterList ParameterDict parameter init functional"
)
_CLOCKS = _words("perf_counter time monotonic process_time thread_time clock_gettime", "time.")
_CLOCKS |= {f"{clock}_ns" for clock in _CLOCKS}
_TIMING_PREFIXES = ("torch.cuda.Event", "triton.testing.do_bench", "torch.utils.benchmark")
_PATCHED = ("time.", "torch.cuda.Event", "torch.cuda.synchronize", "torch.cuda.Stream", "triton.testing.")
_STREAMS = _words(
    "cuda.Stream cuda.ExternalStream cuda.stream cuda.set_stream cuda.StreamContext "
    "cuda.streams.Stream Stream cuda.graph cuda.CUDAGraph cuda.make_graphed_callables",
    "torch.",
)
_CONCURRENCY_MODULES = _words("threading _thread multiprocessing concurrent asyncio")
_THREAD_PREFIXES = ("torch.multiprocessing", "os.fork")
_COMPILERS = ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit.script", "torch.jit.trace")
_FOREIGN_MODULES = _words("cupy numba pycuda cuda ctypes cffi tvm tilelang")
_INTROSPECTION = _words(
    "sys._getframe sys.settrace sys.setprofile sys.addaudithook inspect.currentframe inspect.stack "
    "inspect.getouterframes inspect.getinnerframes inspect.trace gc.get_objects gc.get_referrers "
    "gc.get_referents gc.disable gc.enable gc.freeze gc.unfreeze gc.set_threshold gc.callbacks"
)
_INTERNAL_ATTRS = _words("__closure__ __globals__ __code__ f_back f_globals f_locals")
_GLOBAL_SETTINGS = _words(
    "torch.manual_seed torch.seed torch.cuda.manual_seed torch.cuda.manual_seed_all torch.random.manual_seed "
    "torch.set_default_dtype torch.set_default_device torch.set_default_tensor_type "
    "torch.set_float32_matmul_precision torch.use_deterministic_algorithms torch.set_flush_denormal "
    "random.seed numpy.random.seed os.putenv os.environ.update os.environ.setdefault os.environ.pop"
)
_GLOBAL_FLAGS = ("torch.backends.", "triton.knobs")
_MUTATING_METHODS = _words("append extend update setdefault add insert __setitem__")
_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
# Import roots whose presence still means "the kernels are in this file" (triton-impl).
_KNOWN_ROOTS = _words("torch triton numpy einops reference") | frozenset(sys.stdlib_module_names)
_TRY_NODES: tuple[type[ast.AST], ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Func = ast.FunctionDef | ast.AsyncFunctionDef


def check_source(text: str, *, kind: str | None = None, framework: bool = False) -> list[Finding]:
    """The findings for one candidate file, sorted by position. `kind` is the workspace kind
    ("kernelbench", "native", "sol-execbench", ...): it picks the timed entry point (ModelNew.forward,
    kernel_fn, run; all when unknown). `framework`: the workspace declares a non-Triton solution
    (protocol.kinds.framework_solution), exempt as the mark exempts a file. Never raises."""
    try:
        tree = ast.parse(python_text(text))  # Columns drops the mark too (source_lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return []
    try:
        checker = _Checker(tree, kind, Columns(text))
        checker.run()
    except Exception:  # an editor aid never takes the editor down; the runtime checks remain
        return []
    baseline = framework or FRAMEWORK_BASELINE_MARK.search(text) is not None
    unique = {
        (f.line, f.column, f.rule, f.end_line, f.end_column): f
        for f in checker.findings
        if not (baseline and f.rule in _BASELINE_EXEMPT)
    }
    return [unique[key] for key in sorted(unique)]


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    """A node's range; a def or class is reduced to its header (`def name`), not its body."""
    line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
    if isinstance(node, (*_FUNCS, ast.ClassDef)):
        keyword = {ast.ClassDef: "class ", ast.AsyncFunctionDef: "async def "}.get(type(node), "def ")
        return line, col, line, col + len(keyword) + len(node.name)
    return line, col, getattr(node, "end_lineno", None) or line, getattr(node, "end_col_offset", None) or col


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _root_name(node: ast.expr) -> ast.Name | None:
    """`a` for `a.b[c].d`: the name an attribute/subscript chain hangs from."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node if isinstance(node, ast.Name) else None


# `if __name__ == "__main__":` never runs when the harness imports the candidate: a self-test
# there may time itself or compare with torch.matmul.
_MAIN_GUARDS = frozenset({"__name__ == '__main__'", "'__main__' == __name__"})
# Fields that never hold a node this module looks at (contexts, operators, names, literals).
_LEAF_FIELDS = _words(
    "ctx op ops id attr name arg kind level module asname type_comment is_async conversion simple"
)
_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    """`node_type`'s fields that may hold child nodes, last first (for a pre-order stack)."""
    fields = _FIELD_CACHE.get(node_type)
    if fields is None:
        skip = _LEAF_FIELDS | ({"value"} if node_type is ast.Constant else frozenset())
        names: tuple[str, ...] = getattr(node_type, "_fields", ())
        fields = _FIELD_CACHE[node_type] = tuple(f for f in reversed(names) if f not in skip)
    return fields


def _str_arg(call: ast.Call, index: int) -> str | None:
    arg = call.args[index] if len(call.args) > index else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


class _Checker:
    """One parsed file: its imports, top-level definitions and timed functions, then the rules."""

    def __init__(self, tree: ast.Module, kind: str | None, columns: Columns) -> None:
        self.tree, self.kind, self.columns = tree, kind, columns  # (ast's columns are bytes)
        self.findings: list[Finding] = []
        self.parents: dict[int, ast.AST] = {}
        self.aliases: dict[str, str] = dict(_DEFAULT_ALIASES)
        self.imports: list[ast.Import | ast.ImportFrom] = []
        self.imported_roots: set[str] = set()
        # One traversal (ast.walk is the cost here): every node in pre-order, each node's
        # parent and innermost function, and each function's nodes (nested ones included).
        self.nodes: list[ast.AST] = []
        self.scopes: dict[int, _Func | None] = {}
        self.inside: dict[int, list[ast.AST]] = {}
        stack: list[tuple[ast.AST, tuple[_Func, ...]]] = [(tree, ())]
        while stack:
            node, funcs = stack.pop()
            self.nodes.append(node)
            self.scopes[id(node)] = funcs[-1] if funcs else None
            for func in funcs:
                self.inside[id(func)].append(node)
            if isinstance(node, _FUNCS):
                self.inside[id(node)] = []
                funcs = (*funcs, node)
            top_if = isinstance(node, ast.If) and self.parents.get(id(node)) is tree
            main_guard = top_if and ast.unparse(node.test) in _MAIN_GUARDS  # type: ignore[attr-defined]
            for field in ("orelse",) if main_guard else _child_fields(type(node)):  # iter_child_nodes
                value = getattr(node, field, None)
                for child in reversed(value) if isinstance(value, list) else (value,):
                    if isinstance(child, ast.AST):
                        self.parents[id(child)] = node
                        stack.append((child, funcs))
            if isinstance(node, ast.Import):
                self.imports.append(node)
                for a in node.names:
                    root = a.name.split(".")[0]
                    self.aliases[a.asname or root] = a.name if a.asname else root
                    self.imported_roots.add(root)
            elif isinstance(node, ast.ImportFrom):
                self.imports.append(node)
                module = node.module or ""
                self.imported_roots.add("." if node.level else module.split(".")[0])
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{module}.{a.name}" if module else a.name
        self.import_bound = {(a.asname or a.name).split(".")[0] for i in self.imports for a in i.names}
        self.functions: dict[str, _Func] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.bindings: dict[str, ast.expr] = {}  # `name = value` at module level
        for stmt in tree.body:
            if isinstance(stmt, _FUNCS):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(target, ast.Name):
                        self.bindings[target.id] = stmt.value
        self.module_names: set[str] = {  # every name bound at module level (not by an import)
            n.id
            for n in self.nodes
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and self.scopes[id(n)] is None
        }
        self.module_names.update(self.functions, self.classes)
        self.all_functions = [n for n in self.nodes if isinstance(n, _FUNCS)]
        self.jit = {id(f) for f in self.all_functions if self._is_jit(f)}
        self.layers: dict[int, set[str]] = {}  # class id -> attributes holding torch.nn layers
        for n in self.nodes:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and self._nn_layer(n.value.func):
                cls = self._class_of(self.scopes[id(n)])
                names = {t.attr for t in n.targets if isinstance(t, ast.Attribute)}
                if cls is not None:
                    self.layers.setdefault(id(cls), set()).update(names)
        self._computes: dict[int, str] | None = None  # made on first use: only try/except needs it

    # -- names and definitions -----------------------------------------------------------------
    def qual(self, node: ast.AST) -> str | None:
        """`torch.nn.functional.relu` for `F.relu` (after `import torch.nn.functional as F`);
        None for anything that does not hang from an imported (or conventionally named) module."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        if node.id in self.module_names and node.id not in self.import_bound:
            return None  # a module-level variable that happens to be called `F` or `time`
        parts.append(self.aliases[node.id])
        return ".".join(reversed(parts))

    def _class_of(self, func: ast.AST | None) -> ast.ClassDef | None:
        parent = self.parents.get(id(func)) if func is not None else None
        return parent if isinstance(parent, ast.ClassDef) else None

    def _is_jit(self, func: _Func) -> bool:
        for decorator in func.decorator_list:
            q = self.qual(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
            if q.startswith("triton.") and q.rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics"):
                return True
        return False

    def _method(self, cls: ast.ClassDef | None, name: str) -> _Func | None:
        """`name` defined in `cls` or in a base class defined in this file (breadth-first)."""
        seen: set[str] = set()
        queue = [cls] if cls is not None else []
        while queue:
            c = queue.pop(0)
            if c.name in seen:
                continue
            seen.add(c.name)
            for stmt in c.body:
                if isinstance(stmt, _FUNCS) and stmt.name == name:
                    return stmt
            queue += [self.classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in self.classes]
        return None

    def _nn_layer(self, node: ast.AST) -> bool:
        """`nn.Linear` and the like: a torch.nn name that is not structure."""
        parts = (self.qual(node) or "").split(".")
        return parts[:2] == ["torch", "nn"] and len(parts) > 2 and parts[2] not in _NN_OK

    def _add(self, rule: str, node: ast.AST, what: str) -> None:
        severity, source, _, why = _RULES[rule]
        where = self.columns.span(*_span(node))
        self.findings.append(Finding(rule, *where, f"{what}: {why}", severity, source))

    # -- what counts as PyTorch compute --------------------------------------------------------
    def _direct_compute(self, call: ast.Call, cls: ast.ClassDef | None) -> str | None:
        """What `call` runs in PyTorch, named for a message; local functions are not followed."""
        func, q = call.func, self.qual(call.func)
        if q is not None and q.startswith("torch."):
            allowed = q in _TORCH_NOT_COMPUTE or q.startswith(_TORCH_NOT_COMPUTE_PREFIXES)
            allowed = allowed or (q.startswith("torch.ops.") and not q.startswith("torch.ops.aten."))
            structure = q.startswith("torch.nn.") and not q.startswith("torch.nn.functional.")
            if (not allowed and not structure) or self._nn_layer(func):
                return q
        if self._reference_callee(func, q, cls):
            return q or "Model"
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if func.attr in ("forward", "__call__") and _is_super_call(receiver):
                return "super().forward"
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                layer = func.attr in self.layers.get(id(cls), ())
                return f"self.{func.attr} (a torch.nn layer)" if layer else None
            if func.attr in _TENSOR_MATH_METHODS and q is None and not isinstance(receiver, ast.Constant):
                root = _root_name(receiver)
                if root is None or root.id == "self" or self.qual(root) is None:
                    return f".{func.attr}()"
        return None

    def _reference_callee(self, func: ast.expr, q: str | None, cls: ast.ClassDef | None) -> bool:
        """The reference: its `Model` (imported, or a copy called from ModelNew), or a function
        of the workspace's reference.py."""
        if isinstance(func, ast.Name) and func.id == "Model":
            return "Model" not in self.module_names or (cls is not None and cls is self._model_new())
        if q is None or q.startswith(("torch.", "triton.")):
            return False
        return q.endswith(".Model") or (
            q.startswith("reference.") and not q.rsplit(".", 1)[-1].startswith(("make_", "get_"))
        )

    def _local_callee(self, call: ast.Call, cls: ast.ClassDef | None) -> _Func | None:
        """The function defined in this file that `call` calls, if one is."""
        func = call.func
        if isinstance(func, ast.Name):
            bound = self.bindings.get(func.id)
            name = bound.id if isinstance(bound, ast.Name) and func.id not in self.functions else func.id
            return self.functions.get(name)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return self._method(cls, func.attr)
        return None

    def _compute_closure(self) -> dict[int, str]:
        """Local functions (by id) that run PyTorch compute, directly or through local calls."""
        direct: dict[int, str] = {}
        callees: dict[int, set[int]] = {}
        for func in self.all_functions:
            if id(func) in self.jit:
                continue
            cls = self._class_of(func)
            callees[id(func)] = {id(c) for c in self._callees(func)}
            labels = (self._direct_compute(n, cls) for n in self.inside[id(func)] if isinstance(n, ast.Call))
            label = next((lb for lb in labels if lb is not None), None)
            if label is not None:
                direct[id(func)] = label
        callers: dict[int, set[int]] = {}
        for fid, targets in callees.items():
            for target in targets:
                callers.setdefault(target, set()).add(fid)
        queue = list(direct)  # a worklist, not recursion: a deep call chain cannot overflow
        while queue:
            target = queue.pop()
            for caller in callers.get(target, ()):
                if caller not in direct:
                    direct[caller] = direct[target]
                    queue.append(caller)
        return direct

    def _callees(self, func: _Func) -> list[_Func]:
        """The non-jit functions of this file that `func` calls."""
        cls, calls = self._class_of(func), (n for n in self.inside[id(func)] if isinstance(n, ast.Call))
        return [c for n in calls if (c := self._local_callee(n, cls)) is not None and id(c) not in self.jit]

    def _compute_call(self, call: ast.Call, cls: ast.ClassDef | None) -> str | None:
        label = self._direct_compute(call, cls)
        callee = self._local_callee(call, cls)
        if self._computes is None:
            self._computes = self._compute_closure()
        if label is None and callee is not None and id(callee) in self._computes:
            label = f"{callee.name}(), which calls {self._computes[id(callee)]}"
        return label

    # -- entry points --------------------------------------------------------------------------
    def _model_new(self) -> ast.ClassDef | None:
        bound = self.bindings.get("ModelNew")
        if isinstance(bound, ast.Name) and bound.id in self.classes:
            return self.classes[bound.id]
        return self.classes.get("ModelNew")

    def entries(self) -> list[tuple[str, _Func]]:
        """The functions the workspace times, each with its label."""
        out: list[tuple[str, _Func]] = []
        names = {"native": ("kernel_fn",), "sol-execbench": ("run",), "kernelbench": ()}
        for name in names.get(self.kind or "", ("kernel_fn", "run")):
            bound = self.bindings.get(name)
            target = bound.id if isinstance(bound, ast.Name) else name
            if target in self.functions:
                out.append((name, self.functions[target]))
        if self.kind not in ("native", "sol-execbench"):
            forward = self._method(self._model_new(), "forward")
            if forward is not None:
                out.append(("ModelNew.forward", forward))
        return out

    def timed(self) -> dict[int, tuple[str, _Func]]:
        """Every non-jit local function reachable from an entry point, and how a message names
        it ("kernel_fn", or "helper() (timed through kernel_fn)")."""
        reached: dict[int, tuple[str, _Func]] = {}
        for label, entry in self.entries():
            stack = [entry]
            while stack:
                func = stack.pop()
                if id(func) in reached or id(func) in self.jit:
                    continue
                where = label if func is entry else f"{func.name}() (timed through {label})"
                reached[id(func)] = (where, func)
                stack.extend(self._callees(func))
        return reached

    # -- the rules -----------------------------------------------------------------------------
    def run(self) -> None:
        self.check_imports()
        self.check_nodes()
        self.check_inheritance_bypass()
        self.check_timed_path()
        self.check_triton_impl()

    def check_imports(self) -> None:
        """thread-injection (upstream `check_thread_injection` flags `import threading` and
        the like), harness-tampering (kernelscope's modules), foreign-kernel (other kernel
        toolchains) and reference-call (an entry point that is a function of reference.py)."""
        for node in self.imports:
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                root = module.split(".")[0]
                if root in _CONCURRENCY_MODULES or module.startswith(_THREAD_PREFIXES):
                    self._add("thread-injection", node, f"imports {module}")
                elif root == "kernelscope":
                    self._add("harness-tampering", node, f"imports {module}, the harness that measures it")
                elif root in _FOREIGN_MODULES or module.startswith("torch.utils.cpp_extension"):
                    self._add("foreign-kernel", node, f"imports {module}")
                elif root == "reference" and isinstance(node, ast.ImportFrom):  # kernel_fn = reference
                    for name in {a.asname or a.name for a in node.names} & {"kernel_fn", "run", "ModelNew"}:
                        self._add("reference-call", node, f"the entry point {name} is imported from {module}")
        for name in ("kernel_fn", "run"):  # kernel_fn = reference.reference
            q = self.qual(self.bindings[name]) if name in self.bindings else None
            if q is not None and q.startswith("reference."):
                self._add("reference-call", self.bindings[name], f"the entry point {name} is {q}")

    def check_nodes(self) -> None:
        """One pass over every node, for the rules that do not depend on where a node is."""
        inner: set[int] = set()  # `a.b` of `a.b.c`: only the whole chain is resolved
        for node in self.nodes:
            if isinstance(node, ast.Attribute):
                inner.add(id(node.value))
                if node.attr in ("_make_subclass", "__torch_function__", "__torch_dispatch__"):
                    self._add("lazy-eval", node, f"uses {node.attr}")
                elif node.attr in _INTERNAL_ATTRS:
                    self._add("harness-tampering", node, f"reads {node.attr}, another function's internals")
            if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
                self.check_reference(node)
            elif isinstance(node, _TRY_NODES):
                self.check_fallback(node)  # type: ignore[arg-type]
            elif isinstance(node, ast.ClassDef):
                self.check_class(node)
            elif isinstance(node, ast.Call):
                self.check_call(node)
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                self.check_subscript_write(node)

    def check_subscript_write(self, node: ast.Subscript) -> None:
        if self.qual(node.value) == "os.environ":
            self._add("global-state-change", node, "sets an environment variable torch and Triton read")

    def check_reference(self, node: ast.Attribute | ast.Name) -> None:
        """What a resolved name refers to: a clock, a stream, the harness, torch.compile..."""
        if isinstance(node, ast.Name) and node.id == "__builtins__":
            self._add("harness-tampering", node, "uses __builtins__")
            return
        q = self.qual(node)
        if q is None:
            return
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node, ast.Attribute):
                self.check_write(node, q)
            return
        parent = self.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        if q == "sys.modules" or q.startswith("sys.modules.") or q in _INTROSPECTION:
            self._add("harness-tampering", node, f"uses {q}")
        elif q in _CLOCKS or q.startswith(_TIMING_PREFIXES):
            self._add("timing-reference", node, f"uses {q}")
        elif called and (q in _STREAMS or q.endswith("cuda.Stream")):
            self._add("stream-injection", node, f"calls {q}")
        elif called and (q.split(".")[0] in _CONCURRENCY_MODULES or q.startswith(_THREAD_PREFIXES)):
            self._add("thread-injection", node, f"calls {q}")
        elif q.startswith(_COMPILERS):
            self._add("torch-compile", node, f"uses {q}")
        elif "cpp_extension" in q or q.endswith(".load_inline"):
            self._add("foreign-kernel", node, f"uses {q}, a CUDA C++ extension")
        elif self._nn_layer(node):
            self._add("pytorch-wrap", node, f"uses {q}")
        elif q == "torch.Tensor.__new__":
            self._add("lazy-eval", node, "calls torch.Tensor.__new__")
        elif called and q in _GLOBAL_SETTINGS:
            self._add("global-state-change", node, f"calls {q}")

    def check_write(self, node: ast.AST, q: str) -> None:
        """An assignment, setattr, delattr or mock.patch of `q`, which hangs from an import.
        timing-event-patch: upstream `check_timing_event_patch` (time.perf_counter = ...)."""
        if q.startswith(_PATCHED):
            self._add("timing-event-patch", node, f"reassigns {q}")
        elif q.startswith(("builtins.", "sys.", "kernelscope.")):
            self._add("harness-tampering", node, f"reassigns {q}")
        elif q.startswith(("torch._dynamo", "torch._inductor")):
            self._add("torch-compile", node, f"sets {q}")
        elif q.startswith(_GLOBAL_FLAGS):
            self._add("global-state-change", node, f"sets {q}")
        else:
            self._add("monkey-patch", node, f"reassigns {q}")

    def check_call(self, call: ast.Call) -> None:
        """setattr/delattr/mock.patch writes, stream methods, as_subclass, exec/eval, imports."""
        func, q = call.func, self.qual(call.func)
        name = func.id if isinstance(func, ast.Name) else None
        if name in ("setattr", "delattr") and call.args:
            target = self.qual(call.args[0])
            if target is not None:
                self.check_write(call, f"{target}.{_str_arg(call, 1) or '*'}")
        elif (name == "patch" or (q or "").endswith("mock.patch")) and "." in (_str_arg(call, 0) or ""):
            self.check_write(call, _str_arg(call, 0) or "")
        elif name in ("exec", "eval", "compile") and name not in self.aliases:  # the builtins
            self._add("dynamic-code", call, f"calls {name}()")
        elif name == "__import__" or q == "importlib.import_module":
            module = _str_arg(call, 0)
            if module is None:
                self._add("dynamic-code", call, "imports a module whose name is computed")
            elif module.split(".")[0] == "kernelscope":
                self._add("harness-tampering", call, f"imports {module}, the harness that measures it")
        elif self._reference_callee(func, q, self._class_of(self.scopes[id(call)])):
            self._add("reference-call", call, f"calls the reference {q or 'Model'}")
        elif isinstance(func, ast.Attribute) and q is None:
            if func.attr in ("wait_stream", "record_stream"):
                self._add("stream-injection", call, f"calls .{func.attr}()")
            elif func.attr == "as_subclass":
                self._add("lazy-eval", call, "calls .as_subclass()")

    def check_class(self, cls: ast.ClassDef) -> None:
        """lazy-eval: upstream `check_lazy_eval` flags `class X(torch.Tensor)` (and
        `_make_subclass`, `torch.Tensor.__new__`, found by check_nodes)."""
        for base in cls.bases:
            if self.qual(base) == "torch.Tensor" or (isinstance(base, ast.Name) and base.id == "Tensor"):
                self._add("lazy-eval", cls, f"class {cls.name} subclasses torch.Tensor")

    def check_fallback(self, node: ast.Try) -> None:
        """torch-fallback-in-except: upstream `check_code_bypass` flags every try/except; here
        only a handler (or finally) that runs PyTorch compute or the reference is a fallback,
        so `except ImportError:` around an import, or one that re-raises, stays quiet."""
        cls = self._class_of(self.scopes[id(node)])
        branches = [("an except branch", h.body) for h in node.handlers]
        branches.append(("a finally branch", node.finalbody))
        for where, body in branches:
            for call in (n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                label = self._compute_call(call, cls)
                if label is not None:
                    self._add("torch-fallback-in-except", call, f"{where} calls {label}")
                    break

    def check_inheritance_bypass(self) -> None:
        """inheritance-bypass: upstream `check_code_bypass` flags `pass` (a ModelNew that
        subclasses Model and adds nothing). Here: ModelNew is Model (an alias or an import), or
        subclasses a class that is neither nn.Module nor defined here, without a forward() of
        its own, or with one that is only `pass`, `...` or a call of the parent's forward."""
        for node in self.imports:
            for a in node.names:
                if a.asname == "ModelNew" and a.name.rsplit(".", 1)[-1] == "Model":
                    self._add("inheritance-bypass", node, "ModelNew is the reference Model, renamed")
        bound = self.bindings.get("ModelNew")
        own = isinstance(bound, ast.Name) and bound.id in self.classes and bound.id != "Model"
        if bound is not None and not own:
            self._add("inheritance-bypass", bound, f"ModelNew is {ast.unparse(bound)}, not its own class")
            return
        model = self._model_new()
        if model is None:
            return
        # A base is the reference's unless it is nn.Module or a helper class of this file (a
        # copy of the reference pasted in as `Model` is still the reference).
        helpers = set(self.classes) - {"Model"}
        foreign = [
            b for b in model.bases if self.qual(b) not in _MODULE_BASES and ast.unparse(b) not in helpers
        ]
        if not foreign:
            return
        base = ast.unparse(foreign[0])
        forward = self._method(model, "forward")
        if forward is None:
            self._add("inheritance-bypass", model, f"ModelNew subclasses {base}, not overriding forward()")
        elif self._passthrough(forward):
            self._add("inheritance-bypass", forward, f"ModelNew.forward only defers to {base}")

    @staticmethod
    def _passthrough(func: _Func) -> bool:
        """A body of only a docstring, `pass`, `...` and calls of a parent's forward/__call__."""
        for stmt in func.body:
            value = stmt.value if isinstance(stmt, (ast.Return, ast.Expr)) else None
            if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(value, ast.Constant)):
                continue
            call_func = value.func if isinstance(value, ast.Call) else None
            if not (
                isinstance(call_func, ast.Attribute)
                and call_func.attr in ("forward", "__call__")
                and (_is_super_call(call_func.value) or isinstance(call_func.value, ast.Name))
            ):
                return False
        return True

    def check_timed_path(self) -> None:
        """torch-computation-ops (upstream `check_torch_computation_ops`, over the whole file;
        here over what the timed entry point runs, so __init__'s weight set-up is not flagged),
        torch-op-in-timed-path and state-across-calls."""
        for where, func in self.timed().values():
            cls, args = self._class_of(func), func.args
            nodes = self.inside[id(func)]
            names = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            names.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
            shared = [n for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal))]
            local = names - {name for n in shared for name in n.names}
            for stmt in shared:
                self._add("state-across-calls", stmt, f"{where} rebinds {', '.join(stmt.names)} across calls")
            for decorator in func.decorator_list:
                q = self.qual(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
                memoized = q.endswith(("lru_cache", "functools.cache")) or ast.unparse(decorator) == "cache"
                if memoized or ast.unparse(decorator) == "lru_cache":
                    self._add("state-across-calls", decorator, f"{where} is memoized")
            for node in nodes:
                if isinstance(node, ast.Call):
                    self._timed_call(node, cls, where, local)
                elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
                    self._state_write(node, where, local)

    def _state_write(self, node: ast.Subscript | ast.Attribute, where: str, local: set[str]) -> None:
        """`_cache[key] = out`, `self._hits[k] = ...`, `self.calls += 1` in the timed path
        (a plain `self.buf = ...` is a lazily made buffer, not flagged)."""
        root = _root_name(node)
        augmented = isinstance(self.parents.get(id(node)), ast.AugAssign)
        on_self = root is not None and root.id == "self" and (isinstance(node, ast.Subscript) or augmented)
        if root is not None and (on_self or (root.id not in local and root.id in self.module_names)):
            self._add("state-across-calls", node, f"{where} writes {ast.unparse(node)}, kept between calls")

    def _timed_call(self, call: ast.Call, cls: ast.ClassDef | None, where: str, local: set[str]) -> None:
        func, q = call.func, self.qual(call.func)
        label = self._direct_compute(call, cls)
        upstream = q is not None and (q in _UPSTREAM_TORCH_OPS or q.startswith("torch.nn.functional."))
        if label is not None and upstream:
            self._add("torch-computation-ops", call, f"{where} calls {q}")
        elif label is not None and label.startswith(("torch.", ".")):
            self._add("torch-op-in-timed-path", call, f"{where} calls {label}")
        if not isinstance(func, ast.Attribute) or func.attr not in _MUTATING_METHODS:
            return
        root = _root_name(func.value)
        if root is None or root.id in local:
            return
        if (root.id in self.module_names and self.qual(root) is None) or (
            root.id == "self" and isinstance(func.value, ast.Attribute)
        ):
            self._add("state-across-calls", call, f"{where} calls {ast.unparse(func)}(), kept between calls")

    def check_triton_impl(self) -> None:
        """triton-impl: upstream `check_triton_impl` (the backend check for backend="triton")
        wants `@triton.jit`/`@triton.autotune` and `tl.*` operations. Skipped when the file
        imports a module of its own (its kernels may live there) or has no entry point."""
        entries = self.entries()
        if not entries or any(r == "." or r not in _KNOWN_ROOTS for r in self.imported_roots):
            return
        model = self._model_new()
        by_class = model is not None and entries[0][0] == "ModelNew.forward"
        anchor: ast.AST = model if by_class and model is not None else entries[0][1]
        if not self.jit:
            self._add("triton-impl", anchor, "the file defines no @triton.jit kernel")
            return
        for func in self.all_functions:
            if id(func) in self.jit and any(
                (self.qual(n) or "").startswith("triton.language")
                for n in self.inside[id(func)]
                if isinstance(n, (ast.Attribute, ast.Name))
            ):
                return
        self._add("triton-impl", anchor, "the @triton.jit kernels use no tl.* operation")
