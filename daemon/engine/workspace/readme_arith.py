"""The target a stop condition's arithmetic comes to, as agents write it into a README.

atrex's setup prompt (orchestrator/prompts/setup.md @16f7ec4 L55) has its agent "compute
absolute targets (`hardware peak * 90%`)" and write them under `## Stop Conditions`, so a
bullet may read `bandwidth >= 4.8TB/s * 90% = 4.32TB/s`. Read by its first number that is a
target of 4,800 GB/s, which no kernel meets and which the README never meant. The target is
the result the bullet states after `=`; with none, the product of one figure with a unit and
factors (`4.8TB/s * 90%`, `0.9 * 4.8TB/s`, `4.8TB/s x 0.9`); any other arithmetic (a sum, a
quotient, a word where a number should be, a stated result its own product contradicts) is a
reason the condition cannot be checked, never a number guessed from part of it.
"""

from __future__ import annotations

import re

from kernelscope.daemon.engine.workspace.readme_lines import NUMBER, UNIT, UNIT_KIND_SCALE

_OPERAND = re.compile(r"\s*(?P<number>" + NUMBER + r")\s*(?P<unit>" + UNIT + r"(?![A-Za-z/])|%)?")
_WORD = re.compile(r"\s*[A-Za-z_][\w./]*")  # (a unit in it: `nanTB/s` is one word)
_OPEN = re.compile(r"\s*\(")
_CLOSE = re.compile(r"\s*\)")
_MULTIPLY = re.compile(r"\s*(?:[*×·]|x(?=\s*[\d.]))")
# a sum, a difference or a quotient: arithmetic, but none this module computes (`-` only before
# a number, so a bullet's `-> then stop` or `- measured by do_bench` stays prose)
_OTHER_OP = re.compile(r"\s*(?:[/+]|[-−](?=\s*[\d.]))")
_EQUALS = re.compile(r"\s*=(?![<>=])")
_DIGITS = re.compile(r"\d*(?:\.(\d+))?(?:[eE]([-+]?\d+))?")
HOW = "write the target it comes to (`>= 4.32TB/s`, `>= 4.8TB/s * 90%`, `>= 4.8TB/s * 90% = 4.32TB/s`)"


class Reading:
    """What the arithmetic after a comparator comes to: `value` in `unit` (as written), and
    `written`, the target as the lens names it (`4.32TB/s`)."""

    __slots__ = ("unit", "value", "written")

    def __init__(self, value: float, unit: str, written: str) -> None:
        self.value = value
        self.unit = unit
        self.written = written


def read_arithmetic(rest: str) -> Reading | str | None:
    """The target `rest` (what follows a comparator) comes to when it is arithmetic; why it
    cannot be read (a reason) when it is arithmetic this module does not compute; None when it
    is no arithmetic (a plain `4.32TB/s`, words: the caller reads it as before)."""
    terms, ops, words, position = _terms(rest)
    if not ops:
        return None
    expression = rest[:position].strip()
    equals = _EQUALS.match(rest, position)
    product = None if words or set(ops) != {"*"} else _product(terms)  # (brackets change no product)
    if equals is not None:
        return _stated(expression, product, rest[equals.end() :])
    return product or f"cannot compute {expression!r}: {HOW}"


def _terms(rest: str) -> tuple[list[re.Match[str]], list[str], bool, int]:
    """The expression `rest` begins with: its numbers, its operators (`*` for any product's,
    else as written), whether it has words (`peak * 90%`), and where it ends.
    Words lead (`HBM peak x 0.9`) or follow an operator; a figure followed by no operator ends
    it, so a note after the target (`3.87TB/s (HBM 4.3TB/s * 90%)`) is no part of it."""
    terms: list[re.Match[str]] = []
    ops: list[str] = []
    words = False
    depth = position = 0
    after_op = 0  # where the expression ends if the last operator has no term after it
    while True:
        operand = _OPERAND.match(rest, position)
        word = None if operand else _WORD.match(rest, position)
        if operand is None and word is None:
            opening = _OPEN.match(rest, position)
            if opening is None:
                if after_op:  # `**bandwidth >= 4.32TB/s**`: Markdown's, no operator
                    ops.pop()
                    position = after_op
                break
            depth, position = depth + 1, opening.end()
            continue
        after_op = 0
        terms += [operand] if operand else []
        words |= word is not None
        position = (operand or word).end()  # type: ignore[union-attr]
        while depth and (closing := _CLOSE.match(rest, position)):
            depth, position = depth - 1, closing.end()
        op = _MULTIPLY.match(rest, position) or _OTHER_OP.match(rest, position)
        if op is not None:
            ops.append("*" if op.re is _MULTIPLY else op.group(0).strip())
            after_op, position = position, op.end()
        elif not (word and not terms):  # (leading words: `HBM peak`)
            break
    return terms, ops, words, position


def _product(terms: list[re.Match[str]]) -> Reading | None:
    """The product of one figure with a unit and unitless factors (`90%`: 0.9); None when the
    terms are not that (no figure, or two)."""
    figures = [t for t in terms if t.group("unit") not in (None, "%")]
    if len(figures) != 1:
        return None
    value = 1.0
    for term in terms:
        value *= float(term.group("number")) / (100.0 if term.group("unit") == "%" else 1.0)
    value = float(f"{value:.12g}")  # 12 us * 110%: 13.2, not 13.200000000000001
    unit = figures[0].group("unit")
    return Reading(value, unit, f"{value:g}{unit}")


def _stated(expression: str, product: Reading | str | None, after: str) -> Reading | str:
    """The result stated after `=`, when it is a figure with a unit its product (where the
    expression has one) agrees with to the digits it is written to."""
    result = _OPERAND.match(after)
    if result is None or result.group("unit") in (None, "%"):
        return f"the result after '=' in {expression!r} is no figure with a unit: {HOW}"
    number, unit = result.group("number"), result.group("unit")
    if not isinstance(product, Reading):
        return Reading(float(number), unit, f"{number}{unit}")
    kind, scale = UNIT_KIND_SCALE[unit.lower()]
    product_kind, product_scale = UNIT_KIND_SCALE[product.unit.lower()]
    if product_kind != kind:
        return f"{expression!r} is a {product_kind}, the result after '=' ({number}{unit}) a {kind}: {HOW}"
    if abs(product.value * product_scale - float(number) * scale) > _half_step(number) * scale * (1 + 1e-9):
        return f"{expression} is {product.written}, not {number}{unit} as stated: {HOW}"
    return Reading(float(number), unit, f"{number}{unit}")


def _half_step(number: str) -> float:
    """Half a unit in the last digit `number` is written to (`4.32`: 0.005): how far a
    product may be from a result rounded to it."""
    digits = _DIGITS.fullmatch(number)
    if digits is None:
        return 0.0
    return 10.0 ** (int(digits.group(2) or 0) - len(digits.group(1) or "")) / 2
