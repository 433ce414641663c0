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
_MULTIPLY = re.compile(r"\s*(?:[*×·⋅∗✕•]|x(?=\s*[\d.])|of(?=\s*[\d.(]))")
# a sum, a difference or a quotient: arithmetic, but none this module computes (`-` only before
# a number, so a bullet's `-> then stop` or `- measured by do_bench` stays prose)
_OTHER_OP = re.compile(r"\s*(?:[/+]|[-−](?=\s*[\d.]))")
# a stated result: `=`, `≈`, or an arrow before a number (`-> then stop` is prose)
_EQUALS = re.compile(r"\s*(?:=(?![<>=])|≈|~=|(?:->|→|=>)(?=\s*[\d.]))")
# what may stand between a figure and arithmetic on it: a bracketed note, words, a comma
_NOTE = re.compile(r"(?:\s*(?:\([^()]*\)|\[[^\[\]]*\]|,|[A-Za-z_][\w.]*))+")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
# Arithmetic ON a plain figure, in what is left of its comparison past a note without numbers
# (`(H200) * 0.9`, `peak × 90%`, `@ 90%`): an operator before a percentage or a fraction (an
# integer after `x`/`*` is a shape or a count: `8192 x 8192`, `per GPU (x8)`), `@`/`at` a
# percentage that ends the comparison (`at 90% confidence` is a condition on the runs), a bare
# percentage after the figure and nothing else, `less`/`minus` a percentage right after it
# (`_TAKEN_OFF`), or a bracketed `(-10%)` directly after the figure. A percentage before a word
# (`20% faster`, `99% of runs`, `80% occupancy`) is prose.
_TIMES = r"(?:[*×·⋅∗✕•]|\bx)"
_WORDS = r"(?:[^\d]|(?<=\w)\d)*?"  # (no number before it; digits in a word are a name: `H200`)
_FACTOR = r"(?:" + NUMBER + r"\s*%|\d*\.\d+(?![\d.]))"
_ENDS = r"(?=\s*(?:$|[)\].,;:!=≈~→-]|of\b))"
# `less`/`minus` a percentage is taken off the figure only directly after it and at the end of
# the comparison (`4.8 TB/s less 10%`, `, minus 10% of peak`, `less 10% = 4.32 TB/s`): `at less
# 10% load`, `(less 10% noise)`, `, minus 5% jitter allowance` are prose
_TAKEN_OFF = (
    r"^\s*,?\s*\b(?:less|minus)\s+" + NUMBER + r"\s*%(?=\s*(?:$|[)\].,;:!=≈~→-]|of\s+(?:the\s+)?peak\b))"
)
_ON_FIGURE = re.compile(
    r"^" + _WORDS + r"(?:" + _TIMES + r"\s*" + _FACTOR + r"|(?:@|\bat\b)\s*" + NUMBER + r"\s*%" + _ENDS + r")"
    r"|^[\s,]*" + NUMBER + r"\s*%\s*[.)]?\s*$"
    r"|" + _TAKEN_OFF + r"|^\s*\(\s*[-−]\s*" + NUMBER + r"\s*%\s*\)"  # (`(-10%)`, directly after it)
)
# the figure named the peak, and a share of it follows (`4.8TB/s HBM peak (target: 90%)`,
# `4.8TB/s peak, 0.9x`, `4.8TB/s peak times 0.9`): read as written, the peak is the target
_PEAK_NOTE = re.compile(r"^" + _WORDS + r"\bpeak\b(?!\s*util)")  # (`peak utilization >= 90%`: a metric)
_SHARE = re.compile(r"(?<![\w.])(?:" + NUMBER + r"\s*(?:%|percent\b)|\d*\.\d+(?![\d.]))")
# a bracket with a figure of its own is a note (`(90% of 4.3 TB/s peak)`, `(x8 GPUs = 24 TB/s)`)
_FIGURE_NOTE = re.compile(r"\((?=[^()]*\d\s*" + UNIT + r"(?![A-Za-z/]))[^()]*\)")
# a derivation the target states of itself (`4.32TB/s = 0.9 × 4.8TB/s`, `(× 0.9 of 4.8TB/s peak)`,
# `(90% of 4.3TB/s)`): checked against it, never read instead of it
_DERIVATION = re.compile(r"^\s*(?:(?:=(?![<>=])|≈|~=)|\(\s*(?:=|≈)?)(?P<body>[^()=,;]*)")
_DERIVED_OPS = re.compile(r"[*×·⋅∗✕•]|\bx\b|\bof\b|(?<=\d)x")
_NOT_A_PRODUCT = re.compile(r"\+|/(?!s\b)|[-−](?=\s*[\d.])")  # (`TB/s` is a unit)
# a count after a product's last factor (`20 us x 100 iterations`, `4.8TB/s * 90 percent`): the
# product of a figure and a count is no target
_COUNTED = re.compile(r"\s*[A-Za-z]+")
_NEXT_COMPARATOR = re.compile(r"(?<![-<>=])(?:>=|<=|≥|≤|=<|>|<(?!-))")  # (`=>`: an arrow)
_STATED = re.compile(r"(?:=(?![<>=])|≈|~=|->|→|=>)\s*(?=[\d.])")
# digits grouped by commas or spaces (`4,320`, `4 320`): read only where a product says which
_GROUPED = re.compile(r"\s*(\d+(?:[, \u00a0\u202f]\d+)+(?:\.\d+)?)\s*" + UNIT + r"(?![A-Za-z/])")
# a target with digits grouped by spaces (`4 320 GB/s`): not `4`, unitless, then words
GROUPED_DIGITS = re.compile(r"^(\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:\.\d+)?)\s*" + UNIT + r"(?![A-Za-z/])")
# Markdown around a target (code, bold) and `~` (approximately: the number is the target)
_MARKUP = re.compile(r"`|\*\*|~(?=\s*[\d.])(?!\s*" + NUMBER + r"\s*%)")
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
        return note_reason(expression, terms[0].group(0) if terms else expression)
    if isinstance(product, Reading) and _COUNTED.match(rest, position) and "." not in terms[-1].group(0):
        return f"cannot tell the target in {quoted(rest[: _COUNTED.match(rest, position).end()])}: {HOW}"  # type: ignore[union-attr]
    return product or f"cannot compute {quoted(expression)}: {HOW}"


def readable(text: str) -> str:
    """`text` with the Markdown a target may be written in blanked (backticks, `**`, a `~`
    before a number) and `X`, `∗` as the `x`, `*` they mean, every character where it was."""
    text = _MARKUP.sub(lambda markup: " " * len(markup.group(0)), text)
    return _CAPITAL_X.sub("x", text)


def _after_figure(rest: str, terms: list[re.Match[str]], position: int) -> Reading | str | None:
    """A plain figure (`4.8TB/s`) is the target unless what is left of its comparison does
    arithmetic on it (`_ON_FIGURE`, `_PEAK_NOTE`): then the result it states (`= 4.32TB/s`),
    else why it cannot be checked. None: the figure stands (a shape, a count, a percentage in
    prose, a note with its own figure), once a derivation it states of itself agrees with it."""
    if not terms or terms[0].group("unit") in (None, "%"):
        return None
    figure = terms[0]
    tail = _NEXT_COMPARATOR.split(rest[position:], maxsplit=1)[0]
    outer = tail  # (notes with a figure of their own blanked, innermost first)
    while (inner := _FIGURE_NOTE.sub(lambda note: " " * len(note.group(0)), outer)) != outer:
        outer = inner
    on_figure = _ON_FIGURE.search(outer)
    peak = _PEAK_NOTE.search(outer)
    share = None if peak is None else _SHARE.search(rest, position + peak.end())
    hit = on_figure or share
    if hit is None:
        return _derivation(rest[position:], figure)
    end = position + hit.end() if hit is on_figure else hit.end()
    end += len(rest[end:]) - len(rest[end:].lstrip()) if rest[end:].lstrip()[:1] in (")", "]") else 0
    end += 1 if rest[end : end + 1] in (")", "]") else 0
    stated = _STATED.search(readable_flat(rest), end)
    if stated is not None:
        expression = rest[: stated.start()].strip()
        return _stated(expression, None, rest[stated.end() :], stated.group(0).strip())
    return note_reason(rest[:end], figure.group(0))


def readable_flat(text: str) -> str:
    """`text` with its brackets blanked, innermost first, every character where it was: what
    stands outside every note."""
    while (inner := _BRACKETED.sub(lambda bracket: " " * len(bracket.group(0)), text)) != text:
        text = inner
    return text


def note_reason(written: str, figure: str) -> str:
    """Why a figure with arithmetic on it past a note (`4.8TB/s (H200) * 0.9`) cannot be
    checked: one wording for every such bullet."""
    return (
        f"cannot tell the target in {quoted(written)}: {' '.join(figure.split())}, or what it comes to? {HOW}"
    )


def quoted(text: str) -> str:
    """`text` quoted for a reason, its whitespace (and Markdown blanked to spaces) collapsed."""
    return repr(" ".join(text.split()))


def _derivation(tail: str, figure: re.Match[str]) -> str | None:
    """Why the target's own derivation (`= 0.9 × 4.8TB/s`, `(90% of 4.3TB/s peak)`) contradicts
    it; None when it states none this module computes, or one that agrees."""
    derived = _DERIVATION.match(tail)
    if derived is None or _NOT_A_PRODUCT.search(derived["body"]) or not _DERIVED_OPS.search(derived["body"]):
        return None
    product = _product(list(_OPERAND.finditer(derived["body"])))
    if product is None:
        return None
    expression = " ".join(derived["body"].split())
    agreed = _agreed(expression, product, figure.group("number"), figure.group("unit"))
    return agreed if isinstance(agreed, str) else None


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
            and after_note.re is _MULTIPLY
            and re.match(r"\s*" + _FACTOR, rest[after_note.end() :])
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
            return _agreed(expression, product, agreeing[0], unit)
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
        return f"{' '.join(expression.split())} is {product.written}, not {number}{unit} as stated: {HOW}"
    return _in_unit(product, product_scale, unit, scale)


def _in_unit(product: Reading, product_scale: float, unit: str, scale: float) -> Reading:
    """The product, exact, in the unit its stated result is written in: `4.8TB/s × 90% ≈ 4TB/s`
    agrees with 4TB/s to its one digit, and is 4.32TB/s; the rounded result is no target."""
    value = float(f"{product.value * product_scale / scale:.12g}")
    return Reading(value, unit, f"{plain(value)}{unit}")


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
