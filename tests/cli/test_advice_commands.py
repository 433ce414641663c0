"""Every `kernelscope ...` command line that kernelscope tells someone to run (diagnostics, lens
texts, CLI messages, the agent skills, the plugin's README, the README and the docs) is one the CLI accepts: known
command, known options, values of the right type. An agent runs what it is told verbatim."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from kernelscope.daemon.cli.main import get_app
from tests.conftest import REPO_ROOT

PLACEHOLDER = re.compile(r"<[^<>]*>")
SOURCES = [
    *sorted((REPO_ROOT / "editor-clients" / "claude-code" / "skills").rglob("SKILL.md")),
    REPO_ROOT / "editor-clients" / "claude-code" / "README.md",
    REPO_ROOT / "README.md",
    *sorted((REPO_ROOT / "docs").rglob("*.md")),
    *sorted((REPO_ROOT / "daemon").rglob("*.py")),
    *sorted((REPO_ROOT / "protocol").rglob("*.py")),
]


def _strings(path: Path) -> list[str]:
    """A Markdown file's text; a module's string literals, docstrings left out (they describe
    the code; what the code prints is what people are told to run)."""
    if path.suffix != ".py":
        return [path.read_text()]
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):  # f-strings: their literal parts, values as placeholders
            found.append("".join(v.value if isinstance(v, ast.Constant) else "<value>" for v in node.values))
    return found


def _code_block_lines(text: str) -> list[str]:
    """Lines inside ``` fences, continuation backslashes joined."""
    lines, inside = [], False
    for line in text.replace("\\\n", " ").splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line.strip())
    return lines


def advised() -> list[tuple[str, str]]:
    """(where, command line) for every `kernelscope ...` in backticks or in a code block."""
    commands = []
    for path in SOURCES:
        if not path.is_file():
            continue
        for text in _strings(path):
            candidates = re.findall(r"`(kernelscope [^`]+)`", text)
            if path.suffix == ".md":
                candidates += [line for line in _code_block_lines(text) if line.startswith("kernelscope ")]
            for line in candidates:
                line = line.split("  #")[0].strip()
                if not re.search(r"\.\.\.|\[|\b[A-Z]{2,}\b", line):  # a synopsis, not a command
                    commands.append((str(path.relative_to(REPO_ROOT)), line))
    return sorted(set(commands))


def test_there_is_advice_to_check() -> None:
    found = advised()
    assert len(found) >= 15, found
    assert any(c.startswith("kernelscope iterate -a") for _, c in found)


@pytest.mark.parametrize(("where", "line"), advised())
def test_advised_command_is_accepted(where: str, line: str) -> None:
    words = shlex.split(PLACEHOLDER.sub("1", line))[1:]
    if words and words[-1] in ("--help", "-h"):  # help exits before parsing the rest
        words = words[:-1]
    if words == ["--version"]:  # the root's eager option: prints and exits
        return
    command = typer.main.get_command(get_app())  # (typer's own vendored click: duck-typed)
    if not words:
        return
    context = command.make_context("kernelscope", list(words))
    while hasattr(command, "resolve_command"):  # a group
        remaining = [*context._protected_args, *context.args]
        if not remaining:
            return  # a group named alone (`kernelscope exp`): it prints its commands
        name, sub, rest = command.resolve_command(context, remaining)  # UsageError: unknown command
        assert sub is not None, f"{where}: unknown command {name!r} in {line!r}"
        command = sub
        try:  # UsageError: an unknown option or a value of the wrong type
            context = command.make_context(name or "", rest, parent=context)
        except Exception as exc:
            if type(exc).__name__ not in ("MissingParameter", "NoArgsIsHelpError"):  # a bare reference
                raise
            return


def _filled(line: str) -> list[str]:
    """A skill's command line as an agent fills it in: the kernel's name, a score, text."""

    def value(match: re.Match[str]) -> str:
        placeholder = match.group()
        return "add_kernel" if "kernel" in placeholder else "0.7" if "speedup" in placeholder else "x"

    return shlex.split(PLACEHOLDER.sub(value, line.split("  #")[0]))


def test_the_history_skill_reads_this_workspace_unmasked_and_files_its_record_under_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a partial restart (v1 masked) a fresh agent runs the experiment-history skill's
    `kernelscope exp` commands verbatim in the workspace folder: none shows the masked v1's
    experiments nor another workspace's, and the attempt it records by hand is then in the
    kernel's history."""
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import KernelExperiment

    ws, other = (tmp_path / "kernel_opt_add").resolve(), (tmp_path / "kernel_opt_other").resolve()
    (ws / "memory").mkdir(parents=True)
    for number in range(3):
        record = {"version": f"v{number}", "masked": number == 1}
        (ws / "memory" / f"v{number}.json").write_text(json.dumps(record))
    monkeypatch.setenv("KERNELSCOPE_DB_URL", str(tmp_path / "exp.sqlite"))
    store = ExperimentStore(None)
    for where, number in ((ws, 0), (ws, 1), (ws, 2), (other, 1)):
        for buggy in (False, True):  # a measured attempt and a crash at each version
            store.create_experiment(
                KernelExperiment(
                    change_summary=f"{where.name} v{number}",
                    score=None if buggy else 1 + number / 10,
                    is_buggy=buggy,
                    workspace=str(where),
                    memory_version=f"v{number}",
                    kernels=["add_kernel"],
                )
            )
    store.close()
    skill = (
        REPO_ROOT / "editor-clients/claude-code/skills/kernelscope-experiment-history/SKILL.md"
    ).read_text()
    commands = [_filled(line) for line in _code_block_lines(skill) if line.startswith("kernelscope exp ")]
    assert [words[2] for words in commands] == ["top", "failures", "list", "summary", "show", "record"]

    def run(words: list[str]) -> Any:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("kernelscope")), *words[1:]],
            capture_output=True,
            text=True,
            cwd=ws,
            timeout=120,
        )
        assert done.returncode == 0, (words, done.stdout, done.stderr)
        return json.loads(done.stdout) if "--json" in words else done.stdout

    tables = [run(words) for words in commands[:3]]  # the lists: tables, one experiment a line
    for table in tables:
        assert "kernel_opt_add v1" not in table and "kernel_opt_other" not in table, table
    assert "kernel_opt_add v0" in tables[0] and "kernel_opt_add v2" in tables[0], tables[0]
    recorded = run(commands[5])
    assert recorded["id"] in run(commands[2])  # the kernel's attempts
    assert run([recorded["id"] if word == "x" else word for word in commands[4]])["id"] == recorded["id"]
    # its summary counts v0's and v2's runs and the recorded one, not the masked v1's (2 more)
    assert next(row for row in run(commands[3]) if row["kernel"] == "add_kernel")["runs"] == 5
