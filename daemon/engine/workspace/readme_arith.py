"""The target a stop condition's arithmetic comes to, as agents write it into a README.

atrex's setup prompt (orchestrator/prompts/setup.md @16f7ec4 L55) has its agent "compute
absolute targets (`hardware peak * 90%`)" and write them under `## Stop Conditions`, so a
bullet may read `bandwidth >= 4.8TB/s * 90% = 4.32TB/s`. Read by its first number that is a
target of 4,800 GB/s, which no kernel meets and which the README never meant. The target is
the result the bullet states after `=`; with none, the product of one figure with a unit and
factors (`4.8TB/s * 90%`, `0.9 * 4.8TB/s`, `4.8TB/s x 0.9`); any other arithmetic (a sum, a
quotient, a word where a number should be, a stated result its own product contradicts) is a
reason the condition cannot be checked, never a number guessed from part of it.

A figure followed by a note and then arithmetic (`4.8TB/s (H200) * 0.9`, `4.8TB/s peak x 90%`,
`4.8TB/s @ 90%`, `4.8TB/s, 90% of peak`) is read by its stated result (`= 4.32TB/s`, checked
against the product across the note) or cannot be checked: read as written it was the peak.
`readable` blanks Markdown a target is written in (`` `4.32TB/s` ``, `**4.32TB/s**`, `~4.32TB/s`)
without moving a character, so positions in the bullet hold.
"""

from __future__ import annotations

import math
import re

from kernelscope.daemon.engine.workspace.readme_lines import NUMBER, UNIT, UNIT_KIND_SCALE

_OPERAND = re.compile(r"\s*(?P<number>" + NUMBER + r")\s*(?P<unit>" + UNIT + r"(?![A-Za-z/])|%)?")
_WORD = re.compile(r"\s*[A-Za-z_][\w./]*")  # (a unit in it: `nanTB/s` is one word)
_OPEN = re.compile(r"\s*\(")
_CLOSE = re.compile(r"\s*\)")
_MULTIPLY = re.compile(r"\s*(?:[*×·∗]|x(?=\s*[\d.])|of(?=\s*[\d.(]))")
# a sum, a difference or a quotient: arithmetic, but none this module computes (`-` only before
# a number, so a bullet's `-> then stop` or `- measured by do_bench` stays prose)
_OTHER_OP = re.compile(r"\s*(?:[/+]|[-−](?=\s*[\d.]))")
# a stated result: `=`, `≈`, or an arrow before a number (`-> then stop` is prose)
_EQUALS = re.compile(r"\s*(?:=(?![<>=])|≈|~=|(?:->|→)(?=\s*[\d.]))")
# what may stand between a figure and arithmetic on it: a bracketed note, words, a comma
_NOTE = re.compile(r"(?:\s*(?:\([^()]*\)|\[[^\[\]]*\]|,|[A-Za-z_][\w.]*))+")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# after a plain figure, in what is left of its comparison (outside brackets), arithmetic on it:
# an operator before a number, `@ 90%`, `at 90%`, a bare `90%`; or a bracket that opens with one
_LATER = re.compile(r"(?:[*×·∗+]|(?<![\w.])[-−/]|\bx)\s*" + NUMBER + r"|(?<![\w.])" + NUMBER + r"\s*%")
_LATER_BRACKET = re.compile(
    r"[(\[]\s*(?:(?:[*×·∗/+@]|x(?=\s*[\d.])|at\b)[^()\[\]]*[)\]]?|" + NUMBER + r"\s*%\s*[)\]])"
)
_NEXT_COMPARATOR = re.compile(r"(?<![-<>=])(?:>=|<=|≥|≤|=>|=<|>|<(?!-))")
_STATED = re.compile(r"(?:=(?![<>=])|≈|~=|->|→)\s*(?=[\d.])")
# digits grouped by commas or spaces (`4,320`, `4 320`): read only where a product says which
_GROUPED = re.compile(r"\s*(\d+(?:[, \u00a0\u202f]\d+)+(?:\.\d+)?)\s*" + UNIT + r"(?![A-Za-z/])")
# a target with digits grouped by spaces (`4 320 GB/s`): not `4`, unitless, then words
GROUPED_DIGITS = re.compile(r"^(\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:\.\d+)?)\s*" + UNIT + r"(?![A-Za-z/])")
# Markdown around a target (code, bold) and `~` (approximately: the number is the target)
_MARKUP = re.compile(r"`|\*\*|~(?=\s*[\d.])")
_CAPITAL_X = re.compile(r"(?<![A-Za-z])X(?=\s*[\d.])")
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
    terms, ops, words, position, noted = _terms(rest)
    if not ops:
        return _after_figure(rest, terms, position)
    expression = rest[:position].strip()
    equals = _EQUALS.match(rest, position)
    product = None if words or set(ops) != {"*"} else _product(terms)  # (brackets change no product)
    if equals is not None:
        return _stated(expression, product, rest[equals.end() :], equals.group(0).strip())
    if noted:
        return f"cannot tell the target in {expression!r} (a note between a figure and its arithmetic): {HOW}"
    return product or f"cannot compute {expression!r}: {HOW}"


def readable(text: str) -> str:
    """`text` with the Markdown a target may be written in blanked (backticks, `**`, a `~`
    before a number) and `X`, `∗` as the `x`, `*` they mean, every character where it was."""
    text = _MARKUP.sub(lambda markup: " " * len(markup.group(0)), text)
    return _CAPITAL_X.sub("x", text)


def _after_figure(rest: str, terms: list[re.Match[str]], position: int) -> Reading | str | None:
    """A plain figure (`4.8TB/s`) is the target unless what is left of its comparison does
    arithmetic on it past a note (`(H200) * 0.9`, `@ 90%`, `, 90% of peak`, `(x 0.9)`): then the
    result it states (`= 4.32TB/s`), else why it cannot be checked. None: the figure stands, and
    a note with its own arithmetic in brackets (`4.32TB/s (4.8TB/s * 90%)`) is no part of it."""
    if not terms or terms[0].group("unit") in (None, "%"):
        return None
    tail = _NEXT_COMPARATOR.split(rest[position:], maxsplit=1)[0]
    flat = tail  # (brackets blanked, innermost first: what stands outside every note)
    while (inner := _BRACKETED.sub(lambda bracket: " " * len(bracket.group(0)), flat)) != flat:
        flat = inner
    later = _LATER.search(flat) or _LATER_BRACKET.search(tail)
    if later is None:
        return None
    stated = _STATED.search(flat, later.end())
    if stated is not None:
        expression = rest[: position + stated.start()].strip()
        return _stated(expression, None, flat[stated.end() :], stated.group(0).strip())
    figure = terms[0].group(0).strip()
    written = f"{figure}{tail[: later.end()].rstrip()}"
    return f"cannot tell the target in {written!r}: {figure}, or what it comes to? {HOW}"


def _terms(rest: str) -> tuple[list[re.Match[str]], list[str], bool, int, bool]:
    """The expression `rest` begins with: its numbers, its operators (`*` for any product's,
    else as written), whether it has words (`peak * 90%`), where it ends, and whether a note
    stands between a term and the operator after it (`4.8TB/s (H200) * 0.9`).
    Words lead (`HBM peak x 0.9`) or follow an operator; a figure followed by no operator ends
    it, so a note after the target (`3.87TB/s (HBM 4.3TB/s * 90%)`) is no part of it."""
    terms: list[re.Match[str]] = []
    ops: list[str] = []
    words = noted = False
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
        op = _operator(rest, position)
        note = None if op or not terms else _NOTE.match(rest, position)
        if (
            note is not None
            and (after_note := _operator(rest, note.end()))
            and _OPERAND.match(rest, after_note.end())
        ):
            op, noted = after_note, True
        if op is not None:
            ops.append("*" if op.re is _MULTIPLY else op.group(0).strip())
            after_op, position = position, op.end()
        elif not (word and not terms):  # (leading words: `HBM peak`)
            break
    return terms, ops, words, position, noted


def _operator(rest: str, position: int) -> re.Match[str] | None:
    """The operator at `position` (`of` only after a percentage: `90% of 4.8TB/s`)."""
    op = _MULTIPLY.match(rest, position) or _OTHER_OP.match(rest, position)
    if op is not None and op.group(0).strip() == "of" and not rest[:position].rstrip().endswith("%"):
        return None
    return op


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
    return Reading(value, unit, f"{plain(value)}{unit}")


def plain(value: float) -> str:
    """`value` as a plain decimal to 12 digits (4320000, not `{:g}`'s 4.32e+06)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, 11 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def _stated(expression: str, product: Reading | str | None, after: str, symbol: str = "=") -> Reading | str:
    """The result stated after `=` (or `≈`, `->`), when it is a figure with a unit its product
    (where the expression has one) agrees with to the digits it is written to."""
    result = _OPERAND.match(after)
    grouped = _GROUPED.match(after)
    if grouped is not None:
        return _grouped(expression, product, grouped.group(1), grouped.group(2), symbol)
    if result is None or result.group("unit") in (None, "%"):
        return f"the result after {symbol!r} in {expression!r} is no figure with a unit: {HOW}"
    number, unit = result.group("number"), result.group("unit")
    return _agreed(expression, product, number, unit)


def _grouped(
    expression: str, product: Reading | str | None, number: str, unit: str, symbol: str
) -> Reading | str:
    """A stated result with grouped digits (`4,320 GB/s`, `4 320 GB/s`): the one reading of it
    (thousands grouped, or a decimal comma) its product agrees with, else why it is not read."""
    readings = [number.replace(",", "").replace(" ", "").replace("\u00a0", "").replace("\u202f", "")]
    if number.count(",") == 1 and "." not in number and " " not in number:
        readings.append(number.replace(",", "."))
    if isinstance(product, Reading):
        agreeing = [r for r in readings if isinstance(_agreed(expression, product, r, unit), Reading)]
        if len(agreeing) == 1:
            return Reading(float(agreeing[0]), unit, f"{agreeing[0]}{unit}")
    return f"the result after {symbol!r} in {expression!r}: {grouping_reason(number)}"


def _agreed(expression: str, product: Reading | str | None, number: str, unit: str) -> Reading | str:
    """The stated `number` `unit` when the product (if any) agrees with it, else why not."""
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


def grouping_reason(number: str) -> str:
    """Why a number with commas is not read, and how to write it: commas that can only group
    thousands (`3,350.5`, `1,000,000`), one that may group them or mark decimals (`3,350`: both
    readings given, neither guessed), a decimal comma (`4,32`), or neither (`1,2,3`); or spaces
    grouping thousands (`4 320`)."""
    if re.fullmatch(r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:\.\d+)?", number):
        return f"{number} has spaces grouping thousands (write {re.sub(r'[^0-9.]', '', number)})"
    plain = number.replace(",", "")
    if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", number):
        if "." in number or number.count(",") > 1:
            return f"{number} has commas grouping thousands (write {plain})"
        decimal = number.replace(",", ".")
        return f"{number} has a comma that may group thousands or mark decimals (write {plain} or {decimal})"
    if number.count(",") == 1 and "." not in number:
        return f"{number} has a decimal comma (write {number.replace(',', '.')})"
    return f"{number} is no number kernelscope reads (write it with a decimal point and no commas)"
