"""The daemon's per-folder settings: a dataclass structured by cattrs with a camelCase hook,
as jedi-language-server does. cattrs is already loaded by pygls, so the server reads its
settings without building pydantic models at start-up (initialize stays as fast as a bare
pygls server's). Invalid values raise ValueError naming the field; the server then shows a
message and keeps the previous settings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import cattrs
from cattrs.gen import make_dict_structure_fn, override
from cattrs.v import format_exception

Mode = Literal["auto", "gpu", "interpreter"]


@dataclass
class Settings:
    db_url: str | None = None  # experiment store URL or SQLite path
    python: str | None = None  # interpreter with torch/triton for benchmarks
    bench_on_save: bool = True
    trusted: bool = False  # the client says the workspace is trusted (re-benchmark on save)
    mode: Mode = "auto"
    debounce_ms: int = 400
    timeout_s: float = 900.0
    memory_limit_mb: int | None = None  # resident-memory cap of a benchmark; None: half of RAM, 0: none
    seeds: int = 2
    agent: str | None = None  # restart agent command (user settings only)
    executor: Literal["local", "ray"] = "local"  # where background benchmarks run
    ray_address: str | None = None  # Ray cluster address for executor "ray"

    def __post_init__(self) -> None:
        checks = [
            ("benchOnSave", isinstance(self.bench_on_save, bool), "must be true or false"),
            ("trusted", isinstance(self.trusted, bool), "must be true or false"),
            ("mode", self.mode in ("auto", "gpu", "interpreter"), "must be auto, gpu or interpreter"),
            ("debounceMs", 0 <= self.debounce_ms <= 60_000, "must be between 0 and 60000"),
            ("timeoutS", self.timeout_s > 0, "must be positive"),
            (
                "memoryLimitMb",
                self.memory_limit_mb is None or self.memory_limit_mb >= 0,
                "must be 0 (no cap) or a positive number of MB",
            ),
            ("seeds", 1 <= self.seeds <= 20, "must be between 1 and 20"),
        ]
        problems = [f"{name}: {message}" for name, ok, message in checks if not ok]
        if problems:
            raise ValueError("; ".join(problems))

    def model_copy(self) -> Settings:
        return Settings(**asdict(self))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _strict_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


_converter = cattrs.Converter(forbid_extra_keys=False)
_converter.register_structure_hook(bool, _strict_bool)  # before the Settings hook is generated
_converter.register_structure_hook(
    Settings,
    make_dict_structure_fn(
        Settings, _converter, **{f.name: override(rename=_camel(f.name)) for f in fields(Settings)}
    ),
)


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return format_exception(exc, type_)


def settings_from(data: dict[str, Any], base: Settings) -> Settings:
    """`base` updated with the camelCase (or snake_case) keys in `data`; unknown keys ignored."""
    merged = {_camel(k): v for k, v in asdict(base).items()}
    merged.update({_camel(k): v for k, v in data.items()})
    try:
        return _converter.structure(merged, Settings)
    except cattrs.BaseValidationError as exc:
        messages = "; ".join(cattrs.transform_error(exc, format_exception=_format))
        raise ValueError(messages) from None
