"""The one plural rule for the counts a person reads (lenses, hover, command answers, CLI
messages): `1 experiment`, `0 experiments`, `3 experiments`."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """`count` and `noun` (singular, a phrase's last word the one made plural: `interpreter
    run`) agreeing in number: the noun as given for one, with an `s` for any other count."""
    return f"{count} {noun if count == 1 else noun + 's'}"
