"""`--problem-size NAME=VALUE`: the one parser of the sizes both processes read (the CLI checks
them before it starts anything; the runner applies them to the reference module)."""

from __future__ import annotations

from collections.abc import Iterable


class SizeError(Exception):
    """A `--problem-size` that the reference module cannot take (a usage error)."""


def parse_problem_sizes(items: Iterable[str]) -> dict[str, int]:
    """`["batch_size=16", "dim=1024"]` -> `{"batch_size": 16, "dim": 1024}`.

    Values are integers (underscores allowed: `dim=393_216`): the constants KernelBench
    problems size their inputs with are all integers, and a float or an expression would
    silently change what the problem computes."""
    sizes: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier():
            raise SizeError(f"--problem-size {item!r}: expected NAME=VALUE, e.g. batch_size=16")
        try:
            number = int(value, 10)
        except ValueError:
            raise SizeError(
                f"--problem-size {item!r}: {value!r} is not an integer (sizes are integer constants)"
            ) from None
        if number < 0:
            raise SizeError(f"--problem-size {item!r}: a size cannot be negative")
        sizes[name] = number
    return sizes


__all__ = ["SizeError", "parse_problem_sizes"]
