"""Two corrections to typer's help output, made once for every command.

typer 0.29 (which vendors click) prints its rich help with a type beside every option, flags
included: `--force <bool>`, `--help <bool>`, as if each took a value (its plain, non-rich help
leaves flags without one: `if not self.is_flag and not self.count` in TyperOption's
get_help_record; the rich table's column asks display_type_rich, which does not). And its usage
line writes a required argument in braces beside the brackets of an optional one
(`compare [OPTIONS] {version_a} {version_b}`, `[more]...`): braces read as a choice or a
placeholder to fill. Both are corrected here by wrapping the two methods, so the help of every
command (and of the root, which imports no command module) reads the same; older typer
releases without them are left as they are."""

from __future__ import annotations

from typing import Any


def tidy_typer_help() -> None:
    """Patch typer's TyperOption and TyperArgument help methods (idempotent)."""
    from typer import core

    option = getattr(core, "TyperOption", None)
    original = getattr(option, "display_type_rich", None)
    if original is not None and not getattr(original, "kernelscope_tidied", False):

        def display_type_rich(self: Any, ctx: Any) -> str | None:
            if self.is_flag or self.count:  # takes no value: nothing to show
                return None
            return original(self, ctx)

        display_type_rich.kernelscope_tidied = True  # type: ignore[attr-defined]
        option.display_type_rich = display_type_rich  # type: ignore[union-attr]

    argument = getattr(core, "TyperArgument", None)
    usage_name = getattr(argument, "_usage_display_name", None)
    if usage_name is not None and not getattr(usage_name, "kernelscope_tidied", False):

        def _usage_display_name(self: Any) -> str:
            name = self.display_name_raw
            if not self.required:
                name = f"[{name}]"
            return f"{name}..." if self.nargs != 1 else str(name)

        _usage_display_name.kernelscope_tidied = True  # type: ignore[attr-defined]
        argument._usage_display_name = _usage_display_name  # type: ignore[union-attr]
