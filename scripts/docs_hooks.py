"""MkDocs hooks: the reference pages of the documentation site, generated from the code as it
is when the site is built, so that they cannot go stale.

A page asks for a generated block with a marker on a line of its own:

- `<!-- generated: cli -->`: every `kernelscope` command, its help and its options, read from
  the typer/click command tree the CLI runs;
- `<!-- generated: settings -->`: every setting (initializationOptions, the user's config
  file, a folder's configuration), its default and its docstring, read from
  `protocol/settings.py`;
- `<!-- generated: layout -->`: the source layout (`scripts/layout.py`);
- `<!-- generated: static-rules -->`, `<!-- generated: trace-statuses -->`: the static rules
  and the Trace status mapping, from their modules' tables;
- `<!-- generated: error-kinds -->`: every `error.kind` of a command's JSON error document
  (`ERROR_KINDS` in daemon/engine/__init__.py).

`mkdocs build --strict` (in scripts/test.sh) fails on an unknown marker, as on a broken link.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def cli_reference() -> str:
    """Markdown for every command, groups walked depth first, in the order `--help` lists them.
    Duck-typed: typer carries its own copy of click, whose classes are not `click`'s."""
    from kernelscope.daemon.cli.main import COMMANDS, resolve_command

    out: list[str] = []

    def command(path: list[str], cmd: Any) -> None:
        out.append(f"## `{' '.join(path)}`\n")
        if cmd.help:
            out.append(cmd.help.strip().split("\f")[0].strip() + "\n")
        ctx = cmd.context_class(cmd, info_name=" ".join(path))
        out.append(f"```text\n{cmd.get_usage(ctx).strip()}\n```\n")
        rows = []
        for param in cmd.params:
            if param.param_type_name == "option":
                if param.hidden:
                    continue
                names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
                default = param.default if param.show_default or param.default not in (None, False) else None
                shown = "" if default in (None, False, ()) or callable(default) else f"`{default}`"
                rows.append(f"| {names} | {_cell(param.help or '')} | {shown} |")
            elif param.param_type_name == "argument":
                help_text = getattr(param, "help", "") or ""
                rows.append(f"| `{(param.metavar or param.name or '').upper()}` | {_cell(help_text)} | |")
        if rows:
            out.append("| option | meaning | default |\n|---|---|---|\n" + "\n".join(rows) + "\n")
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    command([*path, name], sub)

    for name in COMMANDS:
        command(["kernelscope", name], resolve_command(name))
    return "\n".join(out)


def _settings_fields(cls_name: str) -> list[tuple[str, str, str, str]]:
    """(name, type, default, docstring) of a settings dataclass, from its source."""
    tree = ast.parse((ROOT / "protocol" / "settings.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    fields: list[tuple[str, str, str, str]] = []
    body = cls.body
    for index, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            following = body[index + 1] if index + 1 < len(body) else None
            doc = (
                following.value.value
                if isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
                else ""
            )
            default = ast.unparse(node.value) if node.value is not None else ""
            fields.append((node.target.id, ast.unparse(node.annotation), default, doc))
    return fields


def settings_reference() -> str:
    from kernelscope.protocol.settings import camel_key

    out = []
    for cls_name, who in (
        ("UserSettings", "the user's: initializationOptions or the config file, never a workspace folder"),
        ("FolderSettings", "a folder may choose them (`workspace/configuration`); the user's are defaults"),
    ):
        out.append(f"### {cls_name}: {who}\n")
        out.append("| setting | type | default | meaning |\n|---|---|---|---|")
        for name, annotation, default, doc in _settings_fields(cls_name):
            out.append(f"| `{camel_key(name)}` | `{annotation}` | `{default}` | {_cell(doc)} |")
        out.append("")
    return "\n".join(out)


def static_rules_reference() -> str:
    """Every static rule (protocol/static_rules.py): id, severity, whose rule it is, what it finds."""
    from kernelscope.protocol.static_rules import _RULES  # the module's one table (ids -> specs)

    rows = ["| rule | severity | from | finds |", "|---|---|---|---|"]
    for rule, (severity, source, description, _why) in sorted(
        _RULES.items(), key=lambda kv: (kv[1][0], kv[0])
    ):
        rows.append(f"| `{rule}` | {severity} | {source} | {_cell(description)} |")
    return "\n".join(rows) + "\n"


def trace_statuses_reference() -> str:
    """How a kernelscope verdict is written as a Trace status (daemon/engine/store/traces.py)."""
    from kernelscope.daemon.engine.store.traces import FLASHINFER_FALLBACK, KIND_STATUS, NO_VERDICT_KINDS

    rows = ["| kernelscope kind | SOL-ExecBench status | FlashInfer-Bench status |", "|---|---|---|"]
    rows.append("| (passed) | `PASSED` | `PASSED` |")
    for kind, status in KIND_STATUS.items():
        rows.append(f"| `{kind}` | `{status}` | `{FLASHINFER_FALLBACK.get(status, status)}` |")
    for kind in sorted(NO_VERDICT_KINDS):
        rows.append(f"| `{kind}` | no record (no verdict on the kernel) | no record |")
    return "\n".join(rows) + "\n"


def error_kinds_reference() -> str:
    """The kinds a command's JSON error document names (the engine's one vocabulary)."""
    from kernelscope.daemon.engine import ERROR_KINDS

    rows = ["| `error.kind` | meaning |", "|---|---|"]
    rows.extend(f"| `{kind}` | {_cell(meaning)} |" for kind, meaning in ERROR_KINDS.items())
    return "\n".join(rows) + "\n"


def layout_reference() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from layout import layout
    finally:
        sys.path.pop(0)
    return str(layout())


GENERATORS = {
    "cli": cli_reference,
    "settings": settings_reference,
    "layout": layout_reference,
    "static-rules": static_rules_reference,
    "trace-statuses": trace_statuses_reference,
    "error-kinds": error_kinds_reference,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with its generated block; an unknown one is an error."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown generated block {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)
