"""The daemon's settings, split by who may set them.

A workspace is often a repository cloned from someone else, and editors forward whatever its
files say (VS Code's `.vscode/settings.json` reaches the server through
`workspace/configuration`, declared keys or not). So:

- `UserSettings` (which interpreter runs benchmarks, whether the workspace is trusted to run
  kernel.py at all, where probes run, where experiments are stored, the restart agent, the
  resource caps) come only from the user: `initializationOptions`, which the editor builds
  from its *user* settings, or the user's config file. A folder answer never changes them.
- `FolderSettings` (mode, seeds, debounce, whether to benchmark on save) may come from the
  folder: they change how a run looks, not what runs or where. `benchOnSave` is a request
  that `UserSettings.trusted` still gates.

Whether a save may run kernel.py is one rule, `distrust`: the user's `trusted` must cover the
workspace, and an editor with a workspace trust of its own (VS Code's, sent as
`workspaceTrusted`) must not have said no. The editor's trust only ever takes away: a trusted
window grants nothing the user's `trusted` does not (VS Code trusts every window when its
workspace trust is off, and one trusted parent folder trusts every repository under it).

Both are dataclasses structured by cattrs with a camelCase hook, as jedi-language-server
does; cattrs is already loaded by pygls, so the server reads its settings without building
pydantic models at start-up. Invalid values raise ValueError naming the field; the server
then shows a message and keeps the previous settings. A refused `trusted` pattern (relative,
`**`) is the exception: it alone is dropped and named, the source's other settings kept.
`Settings` is the effective view of one workspace (user + folder), built by
`Settings.compose`, never parsed from a client directly.
"""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

import cattrs
from cattrs.gen import make_dict_structure_fn, override
from cattrs.v import format_exception

Mode = Literal["auto", "gpu", "interpreter"]
Executor = Literal["local", "ray"]


@dataclass
class UserSettings:
    """Settings that decide what runs, where, and with what limits: the user's alone."""

    db_url: str | None = None
    """The experiment store: a SQLite path or an SQLAlchemy URL (default: the user's
    `$XDG_DATA_HOME/kernelscope/experiments.sqlite`, the one every command reads)."""
    python: str | None = None
    """The interpreter with torch and triton that runs benchmarks (default: the daemon's own)."""
    trusted: bool | list[str] = False
    """Whether kernel.py may run on save: `true` (every workspace), `false`, or the workspaces
    the user trusts, as absolute paths or globs (`["~/kernel_opt_*"]`; `*`, `?` and `[...]`
    match within one folder name, never across `/`, so `~/work/*` trusts `~/work/a` but not
    `~/work/a/b`). An agent's LSP plugin starts the daemon in every Python project, so only
    chosen workspaces run code. A relative pattern or one with `**` is refused: that pattern
    alone is dropped, with a warning naming it, and the other settings are kept (a list left
    with none keeps the trust the config file gave)."""
    workspace_trusted: bool | None = None
    """The editor's own workspace trust, for editors that have one (the VS Code extension sends
    `vscode.workspace.isTrusted`; not a setting to write): `false` (a restricted window) and
    nothing runs on save whatever `trusted` says; `true` or unset, `trusted` alone decides."""
    agent: str | None = None
    """The agent command `restart` starts after a mask-half (e.g. `claude -p`)."""
    executor: Executor = "local"
    """Where background benchmarks run: `local` or `ray`."""
    ray_address: str | None = None
    """The Ray cluster address for executor `ray`."""
    timeout_s: float = 900.0
    """Seconds a benchmark (a save's probe, `kernelscope.benchmark`, an iteration's run) may run
    before it is stopped. A restart's agent has the command's own limit (`timeoutS`, 1 h)."""
    memory_limit_mb: int | None = None
    """Resident-memory cap of a benchmark in MB: unset, half of RAM; 0, none."""

    def __post_init__(self) -> None:
        _check(
            [
                (
                    "trusted",
                    isinstance(self.trusted, bool)
                    or (isinstance(self.trusted, list) and all(isinstance(p, str) for p in self.trusted)),
                    "must be true, false or a list of workspace paths or globs",
                ),
                *(("trusted", False, problem) for problem in _pattern_problems(self.trusted)),
                ("executor", self.executor in ("local", "ray"), "must be local or ray"),
                ("timeoutS", self.timeout_s > 0, "must be positive"),
                (
                    "memoryLimitMb",
                    self.memory_limit_mb is None or self.memory_limit_mb >= 0,
                    "must be 0 (no cap) or a positive number of MB",
                ),
            ]
        )


@dataclass
class FolderSettings:
    """Settings a workspace folder may choose: how runs look, never what runs."""

    bench_on_save: bool = True
    """Re-benchmark kernel.py on save (a request: only trusted workspaces are benchmarked)."""
    mode: Mode = "auto"
    """`auto` (the GPU when there is one, else the CPU interpreter), `gpu` or `interpreter`."""
    debounce_ms: int = 400
    """Milliseconds of quiet after a save before its benchmark starts (0 to 60000)."""
    seeds: int = 2
    """Input draws the benchmark on save and Benchmark now check correctness on (1 to 20): a
    quick look. A recorded iteration is checked on the evaluator's own count (KernelBench 5,
    SOL-ExecBench 10, else 3), from the editor as from `kernelscope iterate`."""
    blame_inlay: bool = False
    """A performance-blame inlay hint on every line of kernel.py."""

    def __post_init__(self) -> None:
        _check(
            [
                ("blameInlay", isinstance(self.blame_inlay, bool), "must be true or false"),
                ("benchOnSave", isinstance(self.bench_on_save, bool), "must be true or false"),
                ("mode", self.mode in ("auto", "gpu", "interpreter"), "must be auto, gpu or interpreter"),
                ("debounceMs", 0 <= self.debounce_ms <= 60_000, "must be between 0 and 60000"),
                ("seeds", 1 <= self.seeds <= 20, "must be between 1 and 20"),
            ]
        )


@dataclass(frozen=True)
class Settings:
    """The effective settings of one workspace: the user's, then the folder's. Read-only."""

    db_url: str | None = None
    python: str | None = None
    trusted: bool = False
    workspace_trusted: bool | None = None
    agent: str | None = None
    executor: Executor = "local"
    ray_address: str | None = None
    timeout_s: float = 900.0
    memory_limit_mb: int | None = None
    bench_on_save: bool = True
    mode: Mode = "auto"
    debounce_ms: int = 400
    seeds: int = 2
    blame_inlay: bool = False

    @classmethod
    def compose(cls, user: UserSettings, folder: FolderSettings, root: Path | None = None) -> Settings:
        """The settings of the workspace at `root`: trusted when nothing distrusts it (the
        user's `trusted` covers it and the editor's workspace trust did not say no)."""
        values = {**asdict(user), **asdict(folder)}
        values["trusted"] = distrust(user, root) is None
        return cls(**values)

    @property
    def runs_on_save(self) -> bool:
        """Whether a save may run kernel.py: the folder may ask, only the user may allow."""
        return self.bench_on_save and self.trusted


USER_KEYS = frozenset(f.name for f in fields(UserSettings))
FOLDER_KEYS = frozenset(f.name for f in fields(FolderSettings))


GLOB_CHARS = "*?["


def _pattern_problems(trusted: object) -> list[str]:
    """What is wrong with the user's trusted patterns: a relative one (it would depend on the
    daemon's working directory) and `**`, which promises any depth while `*` is one folder."""
    if not isinstance(trusted, list):
        return []
    problems = []
    for pattern in trusted:
        if not isinstance(pattern, str):
            continue
        if not Path(pattern).expanduser().is_absolute():
            problems.append(f"{pattern!r} is not an absolute path (start it with / or ~)")
        elif "**" in pattern:
            problems.append(
                f"{pattern!r}: `**` is not supported (`*` matches one folder name, never across /): "
                "name each workspace, or one `*` per folder level"
            )
    return problems


def _glob_matches(pattern: Path, where: Path) -> bool:
    """`pattern` matches the path `where` folder by folder: a wildcard never spans a `/`."""
    return len(pattern.parts) == len(where.parts) and all(
        fnmatch.fnmatchcase(part, wanted) for part, wanted in zip(where.parts, pattern.parts, strict=True)
    )


def _covers(pattern: str, where: Path) -> bool:
    wanted = Path(pattern).expanduser()
    if not any(c in pattern for c in GLOB_CHARS):
        return wanted.resolve() == where
    return _glob_matches(wanted, where) or _glob_matches(wanted.resolve(), where)


def trusts(trusted: bool | list[str], root: Path | None) -> bool:
    """Whether `trusted` (the user's setting) covers the workspace at `root`: a path names
    the workspace itself, a glob matches it folder by folder (`~` expanded, symlinks
    resolved)."""
    if isinstance(trusted, bool):
        return trusted
    if root is None:
        return False
    where = Path(root).expanduser().resolve()
    return any(_covers(pattern, where) for pattern in trusted)


TrustSource = Literal["config file", "editor settings"]
"""Where the user's `trusted` came from: the config file (or its default, false), or the
editor's settings sent as initializationOptions (which replace the file's)."""


@dataclass(frozen=True)
class Distrust:
    """Why saves of a workspace do not run kernel.py, by what decided it (for the notice)."""

    window: bool
    """The editor's workspace trust said no (VS Code's restricted window)."""
    setting: TrustSource | None
    """The user's `trusted`, from there, does not cover the workspace (None: it does)."""
    narrowed: str | None = None
    """A pattern that matched the workspace only across a `/` (`trust_narrowed`)."""


def distrust(user: UserSettings, root: Path | None, source: TrustSource = "config file") -> Distrust | None:
    """Whether saves of the workspace at `root` may run kernel.py (None) or why not: the one
    rule. The user's `trusted` (from `source`) must cover it and the editor's workspace trust,
    where the editor has one, must not be false."""
    window = user.workspace_trusted is False
    covered = trusts(user.trusted, root)
    if covered and not window:
        return None
    narrowed = trust_narrowed(user.trusted, root) if root is not None and not covered else None
    return Distrust(window, None if covered else source, narrowed)


def trust_source(data: dict[str, Any]) -> TrustSource | None:
    """`"editor settings"` when `data` (initializationOptions) sets `trusted` once its refused
    patterns are dropped (then it replaces the config file's), else None."""
    known, _ = _without_refused_patterns(_known(data, USER_KEYS))
    return "editor settings" if any(snake_key(k) == "trusted" for k in known) else None


def trust_narrowed(trusted: bool | list[str], root: Path) -> str | None:
    """A pattern that matched `root` only across a `/` (as earlier releases read `*`),
    so a user whose workspace lost its trust is told why: None when there is none."""
    if isinstance(trusted, bool) or trusts(trusted, root):
        return None
    where = str(Path(root).expanduser().resolve())
    globs = [pattern for pattern in trusted if any(c in pattern for c in GLOB_CHARS)]
    return next((p for p in globs if fnmatch.fnmatchcase(where, str(Path(p).expanduser()))), None)


def _check(checks: list[tuple[str, bool, str]]) -> None:
    problems = [f"{name}: {message}" for name, ok, message in checks if not ok]
    if problems:
        raise ValueError("; ".join(problems))


def camel_key(name: str) -> str:
    """A setting's key as editors write it: db_url -> dbUrl."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def snake_key(name: str) -> str:
    """A setting's field name from either spelling: dbUrl -> db_url, db_url -> db_url."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _strict_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _strict_int(value: Any, _type: Any) -> int:
    """A whole number as JSON or TOML gives it (400, or 400.0): not `true` (cattrs made it 1)
    nor 2.7 (made 2) nor "400", which would pass silently as another value than the user's."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


def _strict_float(value: Any, _type: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _strict_str(value: Any, _type: Any) -> str:
    """Text as the user wrote it: not a list (`agent = ["claude", "-p"]` became the command
    "['claude', '-p']") nor a number (`python = 3` the program "3")."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _trust(value: Any, _type: Any) -> bool | list[str]:
    if isinstance(value, bool) or (isinstance(value, list) and all(isinstance(p, str) for p in value)):
        return value
    raise ValueError(f"expected true, false or a list of workspace paths or globs, got {value!r}")


_converter = cattrs.Converter(forbid_extra_keys=False)
_converter.register_structure_hook(bool, _strict_bool)  # before the dataclass hooks are generated
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook(float, _strict_float)
_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook(bool | list[str], _trust)
for _cls in (UserSettings, FolderSettings):
    _renames: dict[str, Any] = {f.name: override(rename=camel_key(f.name)) for f in fields(_cls)}
    _converter.register_structure_hook(_cls, make_dict_structure_fn(_cls, _converter, **_renames))


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return format_exception(exc, type_)


_T = TypeVar("_T", UserSettings, FolderSettings)


def _structure(cls: type[_T], data: dict[str, Any], base: _T) -> _T:
    merged = {camel_key(k): v for k, v in asdict(base).items()}
    merged.update({camel_key(snake_key(k)): v for k, v in data.items()})
    try:
        return _converter.structure(merged, cls)
    except cattrs.BaseValidationError as exc:
        messages = "; ".join(cattrs.transform_error(exc, format_exception=_format))
        raise ValueError(messages) from None


def _known(data: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if isinstance(k, str) and snake_key(k) in keys}


def _without_refused_patterns(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`data` less the `trusted` patterns that are refused (relative, `**`), and what is wrong
    with each: one such pattern made the whole source invalid, so every other setting the user
    wrote (the interpreter, the agent, the limits) fell back to its default, unsaid."""
    trusted = data.get("trusted")
    if not isinstance(trusted, list) or not all(isinstance(p, str) for p in trusted):
        return data, []  # not a list of patterns: invalid as a whole, quoted as the user wrote it
    checked = [(pattern, _pattern_problems([pattern])) for pattern in trusted]
    dropped = [
        f"trusted: {problem}: that pattern is ignored" for _, problems in checked for problem in problems
    ]
    if not dropped:
        return data, []
    kept = [pattern for pattern, problems in checked if not problems]
    if not kept:  # nothing of this list stands: the trust an earlier source gave stays as it was
        rest = {k: v for k, v in data.items() if k != "trusted"}
        return rest, [*dropped, "trusted: no pattern of this list is left: the earlier trusted setting stays"]
    return {**data, "trusted": kept}, dropped


def user_settings_from(
    data: dict[str, Any], user: UserSettings | None = None, folder: FolderSettings | None = None
) -> tuple[UserSettings, FolderSettings, list[str]]:
    """From the user (initializationOptions, the user's config file): user settings and the
    folder defaults, camelCase or snake_case keys; unknown keys ignored. A refused `trusted`
    pattern is dropped, not the source: the third value says which and why (to be shown)."""
    known, dropped = _without_refused_patterns(_known(data, USER_KEYS))
    return (
        _structure(UserSettings, known, user or UserSettings()),
        _structure(FolderSettings, _known(data, FOLDER_KEYS), folder or FolderSettings()),
        dropped,
    )


def folder_settings_from(
    data: dict[str, Any], base: FolderSettings, user_said: dict[str, Any] | None = None
) -> tuple[FolderSettings, list[str]]:
    """From a folder (`workspace/configuration`, `didChangeConfiguration`): only folder keys
    are read. The second value names the keys ignored: user-only ones (`trusted`, `python`,
    `rayAddress`...) a folder may not set, and unknown ones; but not a key that holds what the
    user's own settings (`user_said`: initializationOptions) hold: it asks for nothing, whoever
    sent it (Helix answers workspace/configuration with the very table it sent as
    initializationOptions). Read or not, named or not, no user-only key is taken from a folder."""
    said = {snake_key(k): v for k, v in (user_said or {}).items() if isinstance(k, str)}

    def repeated(key: str) -> bool:
        if snake_key(key) not in said:
            return False
        value = said[snake_key(key)]
        return type(value) is type(data[key]) and value == data[key]  # True is not 1

    ignored = sorted(
        str(k) for k in data if not (isinstance(k, str) and (snake_key(k) in FOLDER_KEYS or repeated(k)))
    )
    return _structure(FolderSettings, _known(data, FOLDER_KEYS), base), ignored


def settings_from(data: dict[str, Any], base: Settings | None = None) -> Settings:
    """Effective settings from one trusted (user) source: for tests and the CLI."""
    base = base or Settings()
    user, folder, dropped = user_settings_from(
        data,
        UserSettings(**{k: getattr(base, k) for k in USER_KEYS}),
        FolderSettings(**{k: getattr(base, k) for k in FOLDER_KEYS}),
    )
    if dropped:  # strict: a test's settings are what it wrote
        raise ValueError("; ".join(dropped))
    return Settings.compose(user, folder)
