"""LSP daemon benchmark, against a bare pygls server in the same run.

    .venv/bin/python benchmarks/lsp_bench.py [--experiments 100000] [--versions 1000] [--kernels 50] [--starts 10]

- time to answer `initialize` (process start included, median of --starts starts) and resident
  memory after it, for `kernelscope serve` started as editors start it (the installed console
  script) and for a bare pygls LanguageServer, interleaved; for reference also
  `python -m kernelscope.daemon.lsp` (the server module alone) and the console script with
  KERNELSCOPE_NO_FAST_PATH=1 (`serve` dispatched through typer, as before the fast path);
- codeLens latency p50/p99 for a kernel.py with 50 kernels, in a workspace with 1,000
  memory versions, with a store of 100,000 experiments (200 requests; each request after a
  `didSave`-free steady state, as while typing);
- the first codeLens of a fresh daemon as an editor asks for it: `didOpen` of kernel.py, then
  the request 375 ms later (VS Code's first lens request), beside the cold answer to a request
  that no `didOpen` announced (each the median of --opens fresh daemons);
- save-to-stale-lens latency: from `didSave` to a codeLens answer marked stale (median of 50);
- history hints through the daemon (benchmarks/history_bench.py's workspace: 50 kernels,
  1,000 versions committed in git, 100,000 experiments): hover (blame) on random lines and
  inlay hints (values tried) for the whole file, p50/p99 of 200 each once the history is built
  (the first, cold, answer reported apart); and from `didSave` of a recorded version's text to
  the "identical to vN" diagnostic, and of a new text to the diagnostics without it (the
  fingerprint check on save; 30 of each, `--saves N`), and of a text that breaks a static rule (`import
  threading`) to that rule's diagnostic (published after the verdict, once the text has
  rested 50 ms; 20 saves).

Goals: initialize <= 1.2x the bare server, memory <= 1.3x, codeLens, hover and inlay p99 <=
10 ms, save-to-stale <= 100 ms, save-to-"already tried" <= 50 ms (fingerprint) + the lens
budget, save-to-static-finding <= 150 ms. Prints a table; not a test. `--part hints` runs only the history-hints part.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BARE = [
    sys.executable,
    "-c",
    "from pygls.lsp.server import LanguageServer; LanguageServer('bare', '0').start_io()",
]
KERNELSCOPE = [str(Path(sys.executable).with_name("kernelscope")), "serve"]  # what editor clients run
MODULE = [sys.executable, "-m", "kernelscope.daemon.lsp"]
# As installed: bytecode caches written (an untimed first start of each server writes them).
ENV = {
    k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KERNELSCOPE_NO_FAST_PATH")
}
TYPER_ENV = {**ENV, "KERNELSCOPE_NO_FAST_PATH": "1"}


class Rpc:
    """A minimal blocking JSON-RPC client over the server's stdio."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env or ENV
        )
        self.next_id = 0

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = self.process.stdout.readline()
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.process.stdout.read(length))

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        request_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message.get("result")
            self._other(message)

    def _other(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # a server request: answer it
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def wait_notification(self, method: str, accept: Any) -> dict[str, Any]:
        """The next notification `method` whose params `accept` returns true for."""
        while True:
            message = self.read()
            if message.get("method") == method and "id" not in message and accept(message.get("params")):
                return message["params"]
            self._other(message)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


# What VS Code (and Neovim 0.10+) declare: inlay hint tooltips may come on inlayHint/resolve.
RESOLVING_CLIENT = {
    "textDocument": {
        "inlayHint": {"resolveSupport": {"properties": ["tooltip", "textEdits", "label.tooltip"]}}
    }
}


def init_params(folder: Path, db: str, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "processId": None,
        "rootUri": folder.as_uri(),
        "capabilities": capabilities or {},
        "workspaceFolders": [{"uri": folder.as_uri(), "name": "bench"}],
        "initializationOptions": {"kernelscope": {"dbUrl": db, "trusted": False}},
    }


def start_once(argv: list[str], env: dict[str, str], folder: Path, db: str) -> tuple[float, float]:
    start = time.perf_counter()
    rpc = Rpc(argv, env)
    rpc.request("initialize", init_params(folder, db))
    elapsed = (time.perf_counter() - start) * 1000
    rpc.notify("initialized", {})
    time.sleep(0.3)
    memory = rpc.rss_mb()
    rpc.close()
    return elapsed, memory


def startup(
    servers: dict[str, tuple[list[str], dict[str, str]]], folder: Path, db: str, runs: int
) -> dict[str, tuple[float, float]]:
    """Median initialize time (ms) and resident memory (MB) per server, the servers interleaved."""
    for argv, env in servers.values():
        start_once(argv, env, folder, db)  # writes bytecode caches; not counted
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for _ in range(runs):
        for name, (argv, env) in servers.items():
            samples[name].append(start_once(argv, env, folder, db))
    return {
        name: (statistics.median(t for t, _ in found), statistics.median(m for _, m in found))
        for name, found in samples.items()
    }


def build_workspace(root: Path, kernels: int, versions: int, experiments: int) -> tuple[Path, str]:
    ws = root / "kernel_opt_big"
    (ws / "memory").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "vector_add" / "README.md", ws / "README.md")
    names = [f"kernel_{i:02d}" for i in range(kernels)]
    body = ["import triton", "import triton.language as tl", ""]
    for name in names:
        body += [
            "",
            "@triton.jit",
            f"def {name}(x_ptr, BLOCK: tl.constexpr):",
            "    offs = tl.arange(0, BLOCK)",
            "    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)",
            "",
        ]
    (ws / "kernel.py").write_text("\n".join(body))
    rng = random.Random(1)
    for number in range(versions):
        record = {
            "version": f"v{number}",
            "masked": rng.random() < 0.3 and number > 0,
            "performance": {
                "latency_us": round(rng.uniform(40, 70), 2),
                "bandwidth_gbps": rng.uniform(3000, 4300),
            },
            "optimization": {"action_category": "tuning", "action_description": f"attempt {number}"},
            "quality_gate": {"result": "PASS" if rng.random() > 0.1 else "FAIL"},
            "pitfalls_and_fixes": [],
        }
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(record, indent=2))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from expdb_bench import synthetic

    from kernelscope.daemon.engine.store import ExperimentStore

    records = synthetic(experiments)
    for index, record in enumerate(records):
        if index % 100 == 0:  # 1% of the store belongs to this workspace
            record.workspace = str(ws)
            record.kernels = [names[index % kernels]]
    db = str(root / "exp.sqlite")
    ExperimentStore(db).import_experiments(records)
    return ws, db


VSCODE_FIRST_LENS_S = 0.375  # VS Code asks for a new editor's lenses after its debounce: min 250 ms x 1.5


def first_lens(
    ws: Path,
    tmp: Path,
    db: str,
    kernels: int,
    announced: bool,
    argv: list[str] = KERNELSCOPE,
    file_lenses: int | None = 5,
) -> float:
    """A fresh daemon, a second after `initialized`, asked for kernel.py's lenses; the ms that
    first request takes. announced: as an editor opens the file, `didOpen` first, then the
    request when VS Code sends it (codelensController.ts schedules it `CodeLensProvide`
    debounce after the model is set, 1.5 x its 250 ms minimum on a first request); else a
    request that no `didOpen` announced (the cold answer: everything read on the spot).
    argv: the daemon to start (another tree's, benchmarks/first_lens_ab.py); file_lenses: the
    lenses at the top of the file besides one per kernel (None: any number, as trees differ)."""
    rpc = Rpc(argv)
    rpc.request("initialize", init_params(tmp, db))
    rpc.notify("initialized", {})
    time.sleep(1.0)
    kernel = ws / "kernel.py"
    uri = kernel.as_uri()
    if announced:
        document = {"uri": uri, "languageId": "python", "version": 1, "text": kernel.read_text()}
        rpc.notify("textDocument/didOpen", {"textDocument": document})
        time.sleep(VSCODE_FIRST_LENS_S)
    start = time.perf_counter()
    lenses = rpc.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    elapsed = (time.perf_counter() - start) * 1000
    if file_lenses is None:
        assert len(lenses) >= kernels, len(lenses)
    else:
        assert len(lenses) == kernels + file_lenses, len(lenses)
    rpc.close()
    return elapsed


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[max(0, int(len(ordered) * 0.99) - 1)]


def timed(call: Any, arguments: list[Any]) -> tuple[float, float]:
    """p50 and p99 in ms of `call(argument)` for each of `arguments` (chosen beforehand, so
    that choosing is not timed)."""
    samples = []
    for argument in arguments:
        start = time.perf_counter()
        call(argument)
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def history_hints(args: argparse.Namespace) -> list[tuple[str, float, float, str]]:
    """Hover, inlay hints and the save check through `kernelscope serve` on a workspace with
    a real git history; rows of (measure, p50 or value, p99, goal)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from history_bench import build_workspace as build_history

    rows: list[tuple[str, float, float, str]] = []
    rng = random.Random(3)
    with tempfile.TemporaryDirectory(prefix="kernelscope-lsp-hints-") as tmp_name:
        tmp = Path(tmp_name)
        env = {**ENV, "KERNELSCOPE_HISTORY_CACHE": str(tmp / "history-cache")}  # cold on disk
        ws, db = build_history(tmp, args.kernels, args.versions, args.experiments)
        kernel = ws / "kernel.py"
        text = kernel.read_text()
        lines = text.count("\n")
        log = subprocess.run(
            ["git", "log", "--format=%H %s", "master"], cwd=ws, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        recorded = []  # (version, its kernel.py) for passing versions that changed kernel.py
        for line in log:
            sha, subject = line.split(" ", 1)
            if subject.startswith("V") and "FAIL" not in subject:
                shown = subprocess.run(
                    ["git", "show", f"{sha}:kernel.py"], cwd=ws, capture_output=True, text=True
                ).stdout
                recorded.append((subject.split(":")[0].lower(), shown))
            if len(recorded) >= 60:
                break
        rpc = Rpc(KERNELSCOPE, env)
        rpc.request("initialize", init_params(tmp, db, RESOLVING_CLIENT))
        rpc.notify("initialized", {})
        uri = kernel.as_uri()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        rpc.notify("textDocument/didOpen", {"textDocument": document})

        def hover(line: int) -> Any:
            return rpc.request(
                "textDocument/hover",
                {"textDocument": {"uri": uri}, "position": {"line": line, "character": 4}},
            )

        def inlay(first: int = 0, last: int = lines) -> Any:
            return rpc.request(
                "textDocument/inlayHint",
                {
                    "textDocument": {"uri": uri},
                    "range": {
                        "start": {"line": first, "character": 0},
                        "end": {"line": last, "character": 0},
                    },
                },
            )

        start = time.perf_counter()
        first = hover(lines // 2)
        cold_ms = (time.perf_counter() - start) * 1000
        assert first and "introduced in v" in first["contents"]["value"], first
        rows.append(("hover first answer (history built, cold)", cold_ms, float("nan"), ""))
        start = time.perf_counter()
        inlay()  # waits for the values-tried tables (every version's kernel.py analysed once)
        rows.append(
            (
                "inlay hints first answer (tables built, cold)",
                (time.perf_counter() - start) * 1000,
                float("nan"),
                "",
            )
        )
        # on a kernel's name the hover adds its experiments: the first such hover after a
        # change reads memory and the store once for every kernel of the file
        source_lines = text.splitlines()
        kernel_lines = [  # a Triton kernel's `def` (the launch wrappers have no experiments)
            i for i, line in enumerate(source_lines) if i and source_lines[i - 1] == "@triton.jit"
        ]
        start = time.perf_counter()
        named = hover(kernel_lines[len(kernel_lines) // 2])
        rows.append(
            (
                "hover on a kernel's name, first after a change (all tables)",
                (time.perf_counter() - start) * 1000,
                float("nan"),
                "once per change",
            )
        )
        assert named and "experiments" in named["contents"]["value"], named
        picks = [rng.randrange(lines) for _ in range(200)]
        for label in ("first pass", "again"):
            p50, p99 = timed(hover, picks)
            rows.append((f"hover (blame) on a random line, {label}", p50, p99, "<= 10 ms"))
        hints = inlay()
        assert any(str(h["label"]).startswith("tried") for h in hints), hints[:3]
        p50, p99 = timed(lambda _: inlay(), range(200))
        rows.append((f"inlay hints, whole file ({len(hints)} hints)", p50, p99, "<= 10 ms"))
        tried = [h for h in hints if str(h["label"]).startswith("tried")]
        resolved = rpc.request("inlayHint/resolve", tried[0])
        assert "| value |" in resolved["tooltip"]["value"], resolved
        # the user points at a hint: its table
        resolve = partial(rpc.request, "inlayHint/resolve")
        p50, p99 = timed(resolve, [rng.choice(tried) for _ in range(200)])
        rows.append(("inlayHint/resolve of a tried hint (its table)", p50, p99, "<= 10 ms"))
        # what editors ask for: the 60 lines in view
        tops = [rng.randrange(max(1, lines - 60)) for _ in range(200)]
        p50, p99 = timed(lambda top: inlay(top, top + 60), tops)
        rows.append(("inlay hints, 60 lines in view", p50, p99, "<= 10 ms"))

        version = 1
        matched, fresh = [], []
        for index in range(args.saves):
            for body in (rng.choice(recorded), None):
                version += 1
                saved = body[1] if body else text + f"\nEXTRA_{index} = {index}\n"
                rpc.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": saved}],
                    },
                )
                # an editor writes the file, then says so (a didSave of text not on disk, as
                # this measured before 2026-12-06, spared whatever reads the file a new text)
                kernel.write_text(saved)
                start = time.perf_counter()
                rpc.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": saved})
                if body:
                    rpc.wait_notification(
                        "textDocument/publishDiagnostics",
                        lambda p: any("identical to" in d["message"] for d in p["diagnostics"]),
                    )
                    matched.append((time.perf_counter() - start) * 1000)
                else:
                    rpc.wait_notification(
                        "textDocument/publishDiagnostics",
                        lambda p: not any("identical to" in d["message"] for d in p["diagnostics"]),
                    )
                    fresh.append((time.perf_counter() - start) * 1000)
        linted = []  # a save that breaks a static rule: its finding arrives after the verdict
        for index in range(20):
            # first the clean text again (HEAD's, a recorded version), until its diagnostics
            # hold no finding: the next save's first publications still show the old ones
            version += 1
            rpc.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            )
            kernel.write_text(text)
            rpc.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
            rpc.wait_notification(
                "textDocument/publishDiagnostics",
                lambda p: (
                    any("identical to" in d["message"] for d in p["diagnostics"])
                    and not any(str(d.get("code", "")).startswith("static:") for d in p["diagnostics"])
                ),
            )
            version += 1
            saved = text + f"\nimport threading  # {index}\n"
            rpc.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": saved}]},
            )
            kernel.write_text(saved)
            start = time.perf_counter()
            rpc.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": saved})
            rpc.wait_notification(
                "textDocument/publishDiagnostics",
                lambda p: any(d.get("code") == "static:thread-injection" for d in p["diagnostics"]),
            )
            linted.append((time.perf_counter() - start) * 1000)
        rpc.close()
        # a client that takes tooltips with the hints (Emacs: lsp-mode 8, eglot): the tables
        # are sent with every answer, made once per history state
        rpc = Rpc(KERNELSCOPE, env)
        rpc.request("initialize", init_params(tmp, db))
        rpc.notify("initialized", {})
        rpc.notify("textDocument/didOpen", {"textDocument": document})
        assert any("tooltip" in h for h in inlay()), "tables expected with the hints"
        p50, p99 = timed(lambda _: inlay(), range(200))
        rpc.close()
        rows.append(("inlay hints, whole file, tables included (no resolve)", p50, p99, "<= 10 ms"))
        p50, p99 = percentiles(matched)
        rows.append(('save of a recorded version -> "identical to" diagnostic', p50, p99, "<= 50 ms + 10 ms"))
        p50, p99 = percentiles(fresh)
        rows.append(("save of new code -> diagnostics without it", p50, p99, "<= 50 ms + 10 ms"))
        p50, p99 = percentiles(linted)
        rows.append(("save breaking a static rule -> its diagnostic", p50, p99, "<= 150 ms"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiments", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument(
        "--opens",
        type=int,
        default=5,
        help="fresh daemons for each first-lens row (after didOpen, and unannounced)",
    )
    parser.add_argument("--part", choices=("all", "hints"), default="all")
    parser.add_argument(
        "--saves", type=int, default=30, help="saves of each kind in the save rows (more: steadier p50)"
    )
    args = parser.parse_args()
    hints = history_hints(args)
    print(
        f"history hints through `kernelscope serve`: {args.kernels} kernels, {args.versions} versions in git, "
        f"{args.experiments} experiments"
    )
    print(f"{'measure':<58} {'p50 ms':>9} {'p99 ms':>9}  goal")
    for name, p50, p99, goal in hints:
        shown = "" if p99 != p99 else f"{p99:>9.2f}"
        print(f"{name:<58} {p50:>9.2f} {shown:>9}  {goal}")
    if args.part == "hints":
        return
    print()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ws, db = build_workspace(tmp, args.kernels, args.versions, args.experiments)
        started = startup(
            {
                "bare": (BARE, ENV),
                "serve": (KERNELSCOPE, ENV),
                "module": (MODULE, ENV),
                "typer": (KERNELSCOPE, TYPER_ENV),
            },
            tmp,
            db,
            args.starts,
        )
        (bare_ms, bare_mb), (ks_ms, ks_mb) = started["bare"], started["serve"]

        rpc = Rpc(KERNELSCOPE)
        rpc.request("initialize", init_params(tmp, db))
        rpc.notify("initialized", {})
        time.sleep(1.0)
        uri = (ws / "kernel.py").as_uri()
        params = {"textDocument": {"uri": uri}}
        lenses = rpc.request("textDocument/codeLens", params)  # cold: the rows below are warm
        assert len(lenses) == args.kernels + 5, len(lenses)  # one per kernel, and the file-level lines
        p50, p99 = timed(lambda _: rpc.request("textDocument/codeLens", params), range(200))
        loaded_mb = rpc.rss_mb()  # after the engine, store and 1,000 records were loaded
        stale = []
        for _ in range(50):
            start = time.perf_counter()
            rpc.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            result = rpc.request("textDocument/codeLens", params)
            assert any(lens["command"]["title"].startswith("(stale)") for lens in result)
            stale.append((time.perf_counter() - start) * 1000)
        rpc.close()
        colds = [first_lens(ws, tmp, db, args.kernels, announced=False) for _ in range(args.opens)]
        opened = [first_lens(ws, tmp, db, args.kernels, announced=True) for _ in range(args.opens)]

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print(
        f"workspace: {args.kernels} kernels, {args.versions} memory versions, store of {args.experiments} experiments"
    )
    print(f"`kernelscope serve` = {' '.join(KERNELSCOPE)} (the console script editors start)")
    print(f"{'measure':<40} {'bare pygls':>12} {'kernelscope':>12} {'ratio':>7}  goal")
    print(
        f"{'initialize (ms, incl. process start)':<40} {bare_ms:>12.1f} {ks_ms:>12.1f} {ks_ms / bare_ms:>6.2f}x  "
        f"{verdict(ks_ms / bare_ms <= 1.2)} (<= 1.2x)"
    )
    print(
        f"{'resident memory (MB)':<40} {bare_mb:>12.1f} {ks_mb:>12.1f} {ks_mb / bare_mb:>6.2f}x  "
        f"{verdict(ks_mb / bare_mb <= 1.3)} (<= 1.3x)"
    )
    for name, label in (("module", "python -m kernelscope.daemon.lsp"), ("typer", "serve through typer")):
        ms, mb = started[name]
        print(
            f"{'  ' + label + ' (ms / MB)':<40} {'':>12} {ms:>12.1f} {ms / bare_ms:>6.2f}x  "
            f"{mb:.1f} MB, {mb / bare_mb:.2f}x"
        )
    print(f"{'resident memory after codeLens (MB)':<40} {'':>12} {loaded_mb:>12.1f}")
    for label, samples in (
        ("codeLens first, no didOpen (cold) ms", colds),
        (f"codeLens first, {VSCODE_FIRST_LENS_S * 1000:.0f} ms after didOpen ms", opened),
    ):
        print(
            f"{label:<40} {'':>12} {statistics.median(samples):>12.2f} {'':>7}  "
            f"median of {len(samples)} fresh daemons: {', '.join(f'{ms:.1f}' for ms in samples)}"
        )
    print(f"{'codeLens p50 ms':<40} {'':>12} {p50:>12.2f}")
    print(f"{'codeLens p99 ms':<40} {'':>12} {p99:>12.2f} {'':>7}  {verdict(p99 <= 10)} (<= 10 ms)")
    print(
        f"{'save -> stale lens ms (median)':<40} {'':>12} {statistics.median(stale):>12.2f} {'':>7}  "
        f"{verdict(statistics.median(stale) <= 100)} (<= 100 ms)"
    )


if __name__ == "__main__":
    main()
