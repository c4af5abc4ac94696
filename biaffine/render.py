"""Dependency trees drawn as a self-contained HTML page of inline SVG (no network, no script).

Example: ``python -m biaffine.render pred.conllu -o trees.html [--gold gold.conllu]
[--sentences 1-20]``.

Arcs are drawn above the words as square brackets with rounded corners, from the head down to
an arrowhead on the dependent; the word on ROOT gets a vertical arrow from the top. An arc's
height is one level above every arc that shares part of its stretch and is drawn before it
(shorter arcs first), so nested arcs sit strictly inside one another and crossing
(non-projective) arcs cross visibly instead of running along each other. Words are the
integer-ID words; a multiword token is shown as a bracket with its surface form under its
words, and empty nodes are left out. A sentence written right to left (more letters of
right-to-left scripts than of left-to-right ones: Arabic, Hebrew, Syriac, Thaana, N'Ko)
is laid out from the right, its first word rightmost.

With a gold file, the predicted tree is drawn with errors coloured (wrong head, or right head
with a wrong label), and the gold arc of every wrong-head word is drawn dashed below the words.
Text widths are estimated from a monospace font, since there is no script to measure them.
"""

from __future__ import annotations

import argparse
import html
import itertools
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from biaffine import cli
from biaffine.cli import silence_closed_stdout
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.files import open_output, refuse_input_as_output, special_kind

__all__ = [
    "COLOURS",
    "Arc",
    "PlacedArc",
    "SentenceLayout",
    "arc_levels",
    "compare_arcs",
    "crossing_pairs",
    "has_crossing",
    "is_right_to_left",
    "layout_sentence",
    "main",
    "multiword_tokens",
    "parse_selection",
    "render_file",
    "render_page",
    "sentence_arcs",
    "sentence_svg",
    "text_width",
    "tree_problem",
]

# Status of an arc -> stroke colour (Okabe-Ito vermillion and blue: distinct for colour-blind
# readers as well).
COLOURS = {
    "plain": "#333333",
    "correct": "#333333",
    "wrong-head": "#d55e00",
    "wrong-label": "#0072b2",
    "gold": "#8a8a8a",
}

FONT = "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace"
CHAR_EM = 0.62  # advance width of a monospace character, in ems (DejaVu Sans Mono: 0.602)
FORM_SIZE, TAG_SIZE, LABEL_SIZE = 15, 11, 11
MARGIN = 10
ROOT_ROOM = LABEL_SIZE + 6  # above the ROOT arrows: their labels
LEVEL_H = 24  # vertical distance between arc levels
SLOT = 8  # horizontal distance between two arc ends on one word
CORNER = 5  # radius of an arc's rounded corners
ARROW = 7  # arrowhead length (its half width is ARROW / 2 + 0.5)
WORD_PAD = 18  # horizontal room around a word's widest text
STROKE = 2


@dataclass(frozen=True, slots=True)
class Arc:
    """One arc to draw: head -> dependent, 0 being ROOT.

    Attributes:
        head: 0..n; 0 is ROOT.
        dependent: 1..n.
        label: the text drawn on the arc (empty: none).
        status: a key of :data:`COLOURS`.
        note: a tooltip (an SVG ``<title>``), e.g. the gold head and label of an error.
    """

    head: int
    dependent: int
    label: str
    status: str = "plain"
    note: str = ""

    @property
    def span(self) -> tuple[int, int]:
        """The positions the arc joins, leftmost first (ROOT at position 0)."""
        return min(self.head, self.dependent), max(self.head, self.dependent)

    def crosses(self, other: Arc) -> bool:
        """Whether the two arcs cross: each has exactly one end strictly inside the other."""
        (a, b), (c, d) = self.span, other.span
        return a < c < b < d or c < a < d < b


@dataclass(frozen=True, slots=True)
class PlacedArc:
    """An arc with its drawing coordinates (SVG user units, y growing downwards).

    Attributes:
        arc: what is drawn.
        level: 1 for the lowest arcs; 0 for a ROOT arc (drawn as a vertical line).
        x_head: where the arc leaves the head word (for a ROOT arc: equal to ``x_dependent``).
        x_dependent: where the arrowhead touches the dependent word.
        y_end: the y of both ends (the words' edge).
        y_turn: the y of the horizontal stretch (a ROOT arc: its far end).
    """

    arc: Arc
    level: int
    x_head: float
    x_dependent: float
    y_end: float
    y_turn: float


@dataclass(frozen=True, slots=True)
class SentenceLayout:
    """Where everything of one sentence goes.

    Attributes:
        width, height: size of the SVG.
        x: float[n+1]; ``x[i]`` is the centre of word i (``x[0]`` is the left margin).
        column: float[n+1]; ``column[i]`` is the width reserved for word i (``column[0]`` = 0).
        above: the arcs above the words (the tree drawn).
        below: the arcs below the words (gold arcs of wrong-head words).
        y_form, y_tag: baselines of the forms and of the UPOS tags.
        y_token: baseline of multiword token forms (their bracket is drawn above it).
    """

    width: float
    height: float
    x: list[float]
    column: list[float]
    above: list[PlacedArc]
    below: list[PlacedArc]
    y_form: float
    y_tag: float
    y_token: float


def text_width(text: str, size: float) -> float:
    """Estimated width of ``text`` at font size ``size`` in a monospace font.

    Wide East Asian characters take two cells and combining marks none, as in a terminal.
    """
    cells = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        cells += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return cells * CHAR_EM * size


def sentence_arcs(sentence: Sentence) -> list[Arc]:
    """The arcs of the words whose HEAD is annotated, labelled by DEPREL."""
    pairs = zip(sentence.given_heads(), sentence.deprels, strict=True)
    return [Arc(head, i, _label(rel)) for i, (head, rel) in enumerate(pairs, 1) if head is not None]


def tree_problem(heads: Sequence[int | None]) -> str | None:
    """What keeps an annotated HEAD column from being a tree with one word on ROOT, or None.

    Args:
        heads: HEAD of words 1..n as :meth:`Sentence.given_heads` gives them (None for ``_``),
            each in 0..n. A sentence without any HEAD (words only) has no problem.

    Returns:
        e.g. ``"HEAD of 1 word not given"``, ``"2 words on ROOT"``, ``"a cycle through word
        1"``; None for a tree (or no HEAD at all).
    """
    missing = heads.count(None)
    if missing == len(heads):
        return None
    if missing:
        return f"HEAD of {_words(missing)} not given"
    roots = heads.count(0)
    if roots != 1:
        return f"{_words(roots) if roots else 'no word'} on ROOT"
    state = [_REACHES_ROOT] + [_UNSEEN] * len(heads)
    for start in range(1, len(heads) + 1):
        path, node = [], start
        while state[node] == _UNSEEN:
            state[node] = _ON_PATH
            path.append(node)
            node = heads[node - 1]
        if state[node] == _ON_PATH:
            return f"a cycle through word {node}"
        for word in path:
            state[word] = _REACHES_ROOT
    return None


_UNSEEN, _ON_PATH, _REACHES_ROOT = range(3)


def _words(count: int) -> str:
    return f"{count} word" if count == 1 else f"{count} words"


def compare_arcs(pred: Sentence, gold: Sentence) -> tuple[list[Arc], list[Arc]]:
    """Predicted arcs marked against gold, and the gold arcs of the wrong-head words.

    Args:
        pred: a sentence with predicted HEAD and DEPREL.
        gold: the same words with gold HEAD and DEPREL.

    Returns:
        (predicted arcs with status ``correct``, ``wrong-head`` or ``wrong-label`` and the
        gold head and label as a note; gold arcs, status ``gold``, one per wrong-head word).

    Raises:
        ValueError: the sentences differ in their words (number or forms), or either has no
            tree.
    """
    where = f"{pred.source}:{pred.line}"
    if len(pred) != len(gold):
        raise ValueError(
            f"{where}: {len(pred)} words, but the gold sentence at {gold.source}:{gold.line} "
            f"has {len(gold)}"
        )
    if pred.forms != gold.forms:
        i, form, gold_form = next(
            (i, a, b)
            for i, (a, b) in enumerate(zip(pred.forms, gold.forms, strict=True), 1)
            if a != b
        )
        raise ValueError(
            f"{where}: word {i} is {form!r}, but the gold sentence at {gold.source}:{gold.line} "
            f"has {gold_form!r} there"
        )
    if pred.heads is None or gold.heads is None:
        missing = pred if pred.heads is None else gold
        raise ValueError(f"{missing.source}:{missing.line}: HEAD not annotated, nothing to compare")
    predicted, gold_arcs = [], []
    for i, form in enumerate(pred.forms, 1):
        head, rel = pred.heads[i - 1], pred.deprels[i - 1]
        gold_head, gold_rel = gold.heads[i - 1], gold.deprels[i - 1]
        note = (
            f"{i} {form}: gold head {gold_head} ({_word(gold, gold_head)}), gold label {gold_rel}"
        )
        if head != gold_head:
            predicted.append(Arc(head, i, _label(rel), "wrong-head", note))
            gold_arcs.append(Arc(gold_head, i, _label(gold_rel), "gold", f"gold arc of {note}"))
        elif rel != gold_rel:
            label = f"{_label(rel)} (gold {_label(gold_rel)})"
            predicted.append(Arc(head, i, label, "wrong-label", note))
        else:
            predicted.append(Arc(head, i, _label(rel), "correct"))
    return predicted, gold_arcs


def _label(deprel: str) -> str:
    return "" if deprel == "_" else deprel


def _word(sentence: Sentence, position: int) -> str:
    return "ROOT" if position == 0 else sentence.forms[position - 1]


def crossing_pairs(arcs: Sequence[Arc]) -> list[tuple[int, int]]:
    """Index pairs (i < j) of crossing arcs; a ROOT arc counts as starting left of word 1.

    A tree has a crossing pair exactly when it is not projective.
    """
    return [
        (i, j)
        for i in range(len(arcs))
        for j in range(i + 1, len(arcs))
        if arcs[i].crosses(arcs[j])
    ]


def has_crossing(arcs: Sequence[Arc]) -> bool:
    """Whether two of ``arcs`` cross (:func:`crossing_pairs` is not empty), in O(n log n).

    Spans sorted by left end (the longer first on a tie) nest or follow one another unless two
    cross: the spans still open form a stack, each inside the one below it, and a span crosses
    one of them exactly when it ends after the innermost one still open ends.
    """
    open_ends: list[int] = []
    for start, end in sorted((arc.span for arc in arcs), key=lambda span: (span[0], -span[1])):
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if open_ends and open_ends[-1] < end:
            return True
        open_ends.append(end)
    return False


def arc_levels(arcs: Sequence[Arc]) -> list[int]:
    """Height level of each arc: one above every shorter arc sharing part of its stretch.

    Arcs are placed shortest first (ties left to right). An arc goes one level above every arc
    already placed whose stretch overlaps its own (sharing only an end word does not count), so
    an arc nested inside another is always lower, and two crossing arcs never share a level.

    Returns:
        int list, one per arc: 1, 2, ... for arcs between words, 0 for ROOT arcs.
    """
    levels = [0] * len(arcs)
    order = sorted(
        (k for k, arc in enumerate(arcs) if arc.head != 0),
        key=lambda k: (arcs[k].span[1] - arcs[k].span[0], arcs[k].span),
    )
    placed: list[int] = []
    for k in order:
        low, high = arcs[k].span
        below = (levels[j] for j in placed if arcs[j].span[0] < high and low < arcs[j].span[1])
        levels[k] = 1 + max(below, default=0)
        placed.append(k)
    return levels


def _slot_offsets(arcs: Sequence[Arc], n: int) -> tuple[list[float], list[float]]:
    """Horizontal offsets from their word's centre of each arc's head end and dependent end.

    Arcs ending at one word get distinct slots. Left to right: arcs from the left (shortest
    first), the ROOT arc, arcs to the right (longest first), so that of two nested arcs sharing
    a word, the inner one's end lies inside the outer one's.
    """
    ends: list[list[tuple[tuple[int, int], int, bool]]] = [[] for _ in range(n + 1)]
    for k, arc in enumerate(arcs):
        low, high = arc.span
        if arc.head == 0:
            ends[arc.dependent].append(((1, 0), k, False))
            continue
        length = high - low
        ends[high].append(((0, length), k, arc.head == high))
        ends[low].append(((2, -length), k, arc.head == low))
    head_offsets, dependent_offsets = [0.0] * len(arcs), [0.0] * len(arcs)
    for word_ends in ends:
        word_ends.sort(key=lambda end: (end[0], arcs[end[1]].dependent))
        middle = (len(word_ends) - 1) / 2
        for slot, (_, k, is_head) in enumerate(word_ends):
            offsets = head_offsets if is_head else dependent_offsets
            offsets[k] = (slot - middle) * SLOT
    return head_offsets, dependent_offsets


def _ends_per_word(arcs: Iterable[Arc], n: int) -> list[int]:
    counts = [0] * (n + 1)
    for arc in arcs:
        counts[arc.dependent] += 1
        counts[arc.head] += arc.head != 0
    return counts


def layout_sentence(
    forms: Sequence[str],
    tags: Sequence[str],
    above: Sequence[Arc],
    below: Sequence[Arc] = (),
    tokens: Sequence[tuple[int, int, str]] = (),
    *,
    right_to_left: bool = False,
) -> SentenceLayout:
    """Positions of the words and arcs of one sentence.

    Args:
        forms: the n word forms.
        tags: n tags drawn under the forms (UPOS; ``_`` or empty strings are left blank).
        above: arcs drawn above the words (at most one per dependent, as in a tree).
        below: arcs drawn below the words.
        tokens: multiword tokens as (first word, last word, surface form).
        right_to_left: lay the words out from the right (:func:`is_right_to_left`): the
            left-to-right layout mirrored, each word and arc end at ``width - x``.

    Returns:
        The layout; every arc's horizontal stretch is long enough for its label.
    """
    n = len(forms)
    slots = list(map(max, _ends_per_word(above, n), _ends_per_word(below, n)))
    column = [0.0] + [
        max(
            text_width(forms[i - 1], FORM_SIZE),
            text_width(_tag(tags[i - 1]), TAG_SIZE),
            (slots[i] - 1) * SLOT + ARROW + 1,
        )
        + WORD_PAD
        for i in range(1, n + 1)
    ]
    for first, last, form in tokens:  # a token's words must leave room for its surface form
        room = sum(column[first : last + 1])
        extra = text_width(form, TAG_SIZE) + WORD_PAD - room
        if extra > 0:
            column[last] += extra
    # Arc ends fan out up to `reach` from their word's centre; neighbours keep their centres
    # twice that apart, so every end stays nearer its own word than any other.
    reach = [(max(k, 1) - 1) / 2 * SLOT + ARROW / 2 + 1 for k in slots]
    x = [float(MARGIN), MARGIN + column[1] / 2]
    for i in range(2, n + 1):
        apart = max((column[i - 1] + column[i]) / 2, 2 * max(reach[i - 1], reach[i]) + 2)
        x.append(x[i - 1] + apart)
    offsets = [_slot_offsets(arcs, n) for arcs in (above, below)]
    _make_room_for_labels(x, [(above, *offsets[0]), (below, *offsets[1])])
    x = [float(round(value)) for value in x]  # whole pixels: 2-pixel lines stay sharp

    levels_above, levels_below = arc_levels(above), arc_levels(below)
    top = max(levels_above, default=0)
    y_end_above = MARGIN + ROOT_ROOM + (top + 0.5) * LEVEL_H if above else MARGIN
    y_form = y_end_above + 5 + FORM_SIZE
    y_tag = y_form + TAG_SIZE + 5
    y_token = y_tag + (10 + TAG_SIZE if tokens else 0)
    y_end_below = y_token + 7
    depth = (max(levels_below, default=0) + 0.5) * LEVEL_H + ROOT_ROOM
    bottom = y_end_below + depth if below else y_end_below
    placed_above = _place(above, levels_above, offsets[0], x, y_end_above, MARGIN + ROOT_ROOM, -1)
    placed_below = _place(below, levels_below, offsets[1], x, y_end_below, bottom - ROOT_ROOM, +1)
    width = float(math.ceil(x[n] + column[n] / 2 + MARGIN))  # whole: mirrored x stay whole
    layout = SentenceLayout(
        width, bottom + MARGIN, x, column, placed_above, placed_below, y_form, y_tag, y_token
    )
    return _mirrored(layout) if right_to_left else layout


def _mirrored(layout: SentenceLayout) -> SentenceLayout:
    """``layout`` reflected left to right: every x at ``width - x``; the text is not."""

    def flipped(placed: PlacedArc) -> PlacedArc:
        x_head, x_dependent = layout.width - placed.x_head, layout.width - placed.x_dependent
        return replace(placed, x_head=x_head, x_dependent=x_dependent)

    return replace(
        layout,
        x=[layout.width - value for value in layout.x],
        above=[flipped(placed) for placed in layout.above],
        below=[flipped(placed) for placed in layout.below],
    )


RIGHT_TO_LEFT = frozenset({"R", "AL"})
"""Unicode bidirectional classes of right-to-left letters (Hebrew; Arabic, Syriac, Thaana)."""


def is_right_to_left(forms: Sequence[str]) -> bool:
    """Whether a sentence is written right to left, as its letters say.

    More of its letters are of a right-to-left script (:data:`RIGHT_TO_LEFT`) than of a
    left-to-right one (bidirectional class L); digits, punctuation and other neutral
    characters do not count, and Latin words inside Arabic text count against it.
    """
    counts = {"rtl": 0, "ltr": 0}
    for form in forms:
        for character in form:
            kind = unicodedata.bidirectional(character)
            if kind in RIGHT_TO_LEFT:
                counts["rtl"] += 1
            elif kind == "L":
                counts["ltr"] += 1
    return counts["rtl"] > counts["ltr"]


def _tag(tag: str) -> str:
    return "" if tag == "_" else tag


def _make_room_for_labels(
    x: list[float], arc_sets: Sequence[tuple[Sequence[Arc], list[float], list[float]]]
) -> None:
    """Moves words right until every arc's horizontal stretch holds its label.

    Arcs are visited by their right end; pushing that word and all after it right lengthens
    only arcs that cross the gap, so an arc made long enough stays long enough.
    """
    stretches = [
        (arc.span, heads[k], deps[k], arc)
        for arcs, heads, deps in arc_sets
        for k, arc in enumerate(arcs)
        if arc.head != 0
    ]
    for (low, high), head_offset, dependent_offset, arc in sorted(stretches, key=lambda s: s[0][1]):
        left_offset, right_offset = (
            (head_offset, dependent_offset) if arc.head == low else (dependent_offset, head_offset)
        )
        needed = _label_width(arc.label) + 2 * CORNER + 6
        missing = needed - ((x[high] + right_offset) - (x[low] + left_offset))
        if missing > 0:
            for i in range(high, len(x)):
                x[i] += missing


def _label_width(label: str) -> float:
    """Width of an arc label's white box (zero for no label)."""
    return text_width(label, LABEL_SIZE) + 6 if label else 0.0


def _place(
    arcs: Sequence[Arc],
    levels: Sequence[int],
    offsets: tuple[list[float], list[float]],
    x: Sequence[float],
    y_end: float,
    y_far: float,
    direction: int,
) -> list[PlacedArc]:
    """Coordinates of arcs drawn away from the words in ``direction`` (-1 up, +1 down)."""
    head_offsets, dependent_offsets = offsets
    placed = []
    for k, arc in enumerate(arcs):
        x_dependent = x[arc.dependent] + dependent_offsets[k]
        if arc.head == 0:
            placed.append(PlacedArc(arc, 0, x_dependent, x_dependent, y_end, y_far))
            continue
        x_head = x[arc.head] + head_offsets[k]
        y_turn = y_end + direction * levels[k] * LEVEL_H
        placed.append(PlacedArc(arc, levels[k], x_head, x_dependent, y_end, y_turn))
    return placed


def multiword_tokens(sentence: Sentence) -> list[tuple[int, int, str]]:
    """The multiword tokens of a read sentence as (first word, last word, surface form).

    Raises:
        ConlluError: a range that ends past the last word or inside the previous range (the
            reader checks only where a range starts; drawing it would index past the words).
    """
    return [(token.first, token.last, token.form) for token in sentence.tokens if token.multiword]


def sentence_svg(sentence: Sentence, gold: Sentence | None = None) -> str:
    """One sentence's tree as an SVG element (a string of well-formed XML).

    Args:
        sentence: the tree to draw (a sentence without HEAD annotation is drawn as words only).
        gold: the gold tree of the same words; errors of ``sentence`` are then coloured and the
            gold arcs of wrong-head words drawn below the words.

    Raises:
        ValueError: with ``gold``, if the word counts differ or a tree is missing.
    """
    above, below = (
        compare_arcs(sentence, gold) if gold is not None else (sentence_arcs(sentence), [])
    )
    tokens = multiword_tokens(sentence)
    rtl = is_right_to_left(sentence.forms)
    layout = layout_sentence(sentence.forms, sentence.upos, above, below, tokens, right_to_left=rtl)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:.0f}" '
        f'height="{layout.height:.0f}" viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" '
        f'font-family="{_escape(FONT)}" role="img">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    parts += _words_svg(sentence, layout)
    drawn = [(placed, -1) for placed in layout.above] + [(placed, +1) for placed in layout.below]
    parts += [_arc_svg(placed, direction) for placed, direction in drawn]
    parts += [_label_svg(placed, direction) for placed, direction in drawn if placed.arc.label]
    parts.append("</svg>")
    return "\n".join(parts)


def _words_svg(sentence: Sentence, layout: SentenceLayout) -> list[str]:
    parts = []
    for i, (form, tag) in enumerate(zip(sentence.forms, sentence.upos, strict=True), 1):
        x = layout.x[i]
        parts.append(
            f'<text class="form" x="{x:.1f}" y="{layout.y_form:.1f}" font-size="{FORM_SIZE}" '
            f'text-anchor="middle" fill="#000000">{_escape(form)}</text>'
        )
        if _tag(tag):
            parts.append(
                f'<text class="tag" x="{x:.1f}" y="{layout.y_tag:.1f}" font-size="{TAG_SIZE}" '
                f'text-anchor="middle" fill="#777777">{_escape(tag)}</text>'
            )
    for first, last, form in multiword_tokens(sentence):
        # The outer edges of its first and last words' columns, in either direction.
        edges = [(i, side) for i in (first, last) for side in (-1, 1)]
        ends = [layout.x[i] + side * layout.column[i] / 2 for i, side in edges]
        left, right = min(ends) + 4, max(ends) - 4
        y = layout.y_token - TAG_SIZE - 2
        parts.append(
            f'<path class="token" d="M{left:.1f},{y - 4:.1f} V{y:.1f} H{right:.1f} V{y - 4:.1f}" '
            'fill="none" stroke="#777777" stroke-width="1"/>'
        )
        parts.append(
            f'<text class="token" x="{(left + right) / 2:.1f}" y="{layout.y_token:.1f}" '
            f'font-size="{TAG_SIZE}" text-anchor="middle" fill="#777777">{_escape(form)}</text>'
        )
    return parts


def _arc_svg(placed: PlacedArc, direction: int) -> str:
    """An arc's line and arrowhead as an SVG group with a tooltip.

    ``direction`` is -1 for an arc above the words, +1 below. The line stops where the
    arrowhead begins, so the arrowhead's tip is the only thing touching the dependent word.
    """
    arc = placed.arc
    colour = COLOURS[arc.status]
    tip_y = placed.y_end
    base_y = tip_y + direction * ARROW
    if arc.head == 0:
        d = f"M{placed.x_dependent:.1f},{placed.y_turn:.1f} V{base_y:.1f}"
    else:
        d = _bracket_path(placed, base_y)
    dash = ' stroke-dasharray="6,3"' if arc.status == "gold" else ""
    half = ARROW / 2 + 0.5
    x = placed.x_dependent
    arrow = f"M{x - half:.1f},{base_y:.1f} L{x + half:.1f},{base_y:.1f} L{x:.1f},{tip_y:.1f} Z"
    return (
        f'<g class="arc {arc.status}" data-head="{arc.head}" data-dependent="{arc.dependent}">'
        f"<title>{_escape(arc.note or _default_note(arc))}</title>"
        f'<path class="line" d="{d}" fill="none" stroke="{colour}" stroke-width="{STROKE}"{dash}/>'
        f'<path class="arrow" d="{arrow}" fill="{colour}"/></g>'
    )


def _label_svg(placed: PlacedArc, direction: int) -> str:
    """An arc's label on a white box: on its horizontal stretch, or beyond a ROOT arrow's end.

    Labels are drawn after every line, so no line runs over a label (a line crossing an arc
    under its label disappears only behind the box, and shows on both sides of it).
    """
    arc = placed.arc
    if arc.head == 0:
        x, y = placed.x_dependent, placed.y_turn + direction * ROOT_ROOM / 2
    else:
        x, y = (placed.x_head + placed.x_dependent) / 2, placed.y_turn
    width, height = _label_width(arc.label), LABEL_SIZE + 3
    return (
        f'<g class="label {arc.status}" data-head="{arc.head}" data-dependent="{arc.dependent}">'
        f'<rect x="{x - width / 2:.1f}" y="{y - height / 2:.1f}" width="{width:.1f}" '
        f'height="{height}" fill="#ffffff"/>'
        f'<text x="{x:.1f}" y="{y + LABEL_SIZE * 0.35:.1f}" font-size="{LABEL_SIZE}" '
        f'text-anchor="middle" fill="{COLOURS[arc.status]}">{_escape(arc.label)}</text></g>'
    )


def _bracket_path(placed: PlacedArc, base_y: float) -> str:
    """Up from the head, across, down to the arrowhead's base, with rounded corners."""
    x1, x2, y = placed.x_head, placed.x_dependent, placed.y_turn
    step = 1 if x2 > x1 else -1
    rise = 1 if placed.y_end > y else -1  # +1: the turn is above the ends
    radius = min(CORNER, abs(x2 - x1) / 2)
    corner_y = y + rise * radius
    return (
        f"M{x1:.1f},{placed.y_end:.1f} V{corner_y:.1f} "
        f"Q{x1:.1f},{y:.1f} {x1 + step * radius:.1f},{y:.1f} H{x2 - step * radius:.1f} "
        f"Q{x2:.1f},{y:.1f} {x2:.1f},{corner_y:.1f} V{base_y:.1f}"
    )


def _default_note(arc: Arc) -> str:
    return f"{arc.head} -> {arc.dependent} {arc.label}".rstrip()


def _escape(text: str) -> str:
    """Text or attribute content, with markup characters and quotes escaped.

    Characters that XML 1.0 does not allow become U+FFFD: CoNLL-U columns may hold them (only
    TAB and line breaks are excluded), and one would leave the SVG not well-formed.
    """
    return html.escape(_NOT_XML.sub("\ufffd", text), quote=True)


# C0 controls but TAB, LF and CR; lone surrogates (only from Python: a file is decoded strictly),
# which could not even be written as UTF-8; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _isolated(markup: str) -> str:
    """``markup`` in a ``<bdi dir="auto">``: its direction is its own.

    Right-to-left text then reads right to left, and neither it nor a bidi control inside it
    (an unclosed U+202E RIGHT-TO-LEFT OVERRIDE) reorders the caption around it.
    """
    return f'<bdi dir="auto">{markup}</bdi>'


_STYLE = """\
body { font-family: 'DejaVu Sans', Arial, sans-serif; margin: 16px; color: #222; }
figure { margin: 0 0 20px 0; }
figcaption { font-size: 14px; margin-bottom: 4px; }
figcaption .id { font-weight: bold; margin-right: 8px; }
figcaption .note { color: #777; margin-left: 8px; }
.tree { overflow-x: auto; }
.legend span { margin-right: 16px; font-size: 13px; }
.legend b { display: inline-block; width: 18px; height: 4px; vertical-align: middle;
            margin-right: 4px; }
"""


def render_page(
    pairs: Iterable[tuple[Sentence, Sentence | None]],
    *,
    title: str = "Dependency trees",
    numbers: Iterable[int] | None = None,
) -> str:
    """A self-contained HTML page: one captioned figure per sentence.

    Args:
        pairs: (sentence, gold sentence or None) in page order.
        title: the page title and heading.
        numbers: each sentence's number in its file, for its caption (where it has no
            ``sent_id``) and its figure's id; None: 1, 2, ... in page order.

    Returns:
        The HTML text (no script, no external resources).

    Raises:
        ValueError: a sentence and its gold differ in words, or a tree is missing.
    """
    figures, with_gold = [], False
    numbered = zip(itertools.count(1) if numbers is None else numbers, pairs, strict=False)
    for number, (sentence, gold) in numbered:
        figures.append(_figure(number, sentence, gold))
        with_gold |= gold is not None
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_escape(title)}</title><style>\n{_STYLE}</style></head><body>",
        f"<h1>{_escape(title)}</h1>",
    ]
    if with_gold:
        head.append(_legend())
    return "\n".join([*head, *figures, "</body></html>", ""])


def _legend() -> str:
    items = [
        ("correct", "correct"),
        ("wrong-head", "wrong head"),
        ("wrong-label", "right head, wrong label"),
        ("gold", "gold arc of a wrong-head word (below the words)"),
    ]
    spans = "".join(
        f'<span><b style="background:{COLOURS[status]}"></b>{text}</span>' for status, text in items
    )
    return f'<p class="legend">{spans}</p>'


def _figure(number: int, sentence: Sentence, gold: Sentence | None) -> str:
    svg = sentence_svg(sentence, gold)
    metadata = sentence.metadata
    sent_id = metadata.get("sent_id") or f"#{number}"
    text = metadata.get("text") or " ".join(sentence.forms)
    notes = [f"{sentence.source}:{sentence.line}"]
    problem = tree_problem(sentence.given_heads())
    if problem is not None:
        notes.append(f"not a tree: {problem}")
    if has_crossing(sentence_arcs(sentence)):
        notes.append("non-projective")
    if gold is not None:
        statuses = [arc.status for arc in compare_arcs(sentence, gold)[0]]
        heads, labelled = len(statuses) - statuses.count("wrong-head"), statuses.count("correct")
        notes.append(f"heads {heads}/{len(sentence)}, labelled {labelled}/{len(sentence)}")
    identifier = _isolated(f'<span class="id">{_escape(sent_id)}</span>')
    caption = (
        f"<figcaption>{identifier}{_isolated(_escape(text))}"
        f'<span class="note">({_escape("; ".join(notes))})</span></figcaption>'
    )
    return f'<figure id="sentence-{number}">{caption}<div class="tree">{svg}</div></figure>'


def parse_selection(spec: str) -> list[tuple[int, int]]:
    """Sentence ranges from ``"1-20"``, ``"7"`` or ``"1-5,9,12-14"`` (1-based, inclusive).

    Raises:
        ValueError: a malformed range, a number below 1, or a range running backwards.
    """
    ranges = []
    for part in spec.split(","):
        match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)  # no "٣": ASCII
        if not match:
            raise ValueError(f"--sentences {spec!r}: {part!r} is not N or N-M")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if first < 1 or last < first:
            raise ValueError(f"--sentences {spec!r}: {part!r} must satisfy 1 <= N <= M")
        ranges.append((first, last))
    return ranges


def _selected(
    sentences: Iterable[Sentence], ranges: Sequence[tuple[int, int]] | None
) -> Iterator[tuple[int, Sentence]]:
    """(1-based number, sentence) of the chosen sentences; stops reading after the last one."""
    last = max((high for _, high in ranges), default=0) if ranges is not None else None
    if last == 0:
        return
    for number, sentence in enumerate(sentences, 1):
        if ranges is None or any(low <= number <= high for low, high in ranges):
            yield number, sentence
        if number == last:
            return  # before reading the next sentence, which may not even be valid


def render_file(
    source: str | Path,
    output: str | Path,
    *,
    gold: str | Path | None = None,
    ranges: Sequence[tuple[int, int]] | None = None,
) -> int:
    """Draws the trees of a CoNLL-U file into an HTML page, written atomically (umask's mode).

    Args:
        source: the CoNLL-U file to draw (predicted trees when ``gold`` is given).
        output: the HTML file; written to a temporary file beside it, then renamed (a special
            file, e.g. ``/dev/stdout``, is written in place: :func:`biaffine.files.open_output`).
        gold: the gold CoNLL-U file of the same sentences, to colour the errors.
        ranges: 1-based inclusive sentence ranges to draw; None draws every sentence.

    Returns:
        The number of sentences drawn.

    Raises:
        ConlluError: an input file is not valid CoNLL-U (the message names file and line).
        ValueError: the gold file has fewer sentences or other words, no sentence selected,
            or ``output`` is ``source`` or ``gold`` (the page would replace an input).
        OSError: the output cannot be written.
    """
    refuse_input_as_output(output, [source] if gold is None else [source, gold])
    numbered = list(_pairs(source, gold, ranges))
    if not numbered:
        raise ValueError(f"{source}: no sentence in the selected range {_ranges_text(ranges)}")
    # numbered as in the file: --sentences 5-7 captioned them #1 to #3
    numbers, pairs = [n for n, *_ in numbered], [(s, g) for _, s, g in numbered]
    page = render_page(pairs, title=f"Dependency trees of {Path(source).name}", numbers=numbers)
    with open_output(output, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(page)
    return len(pairs)


def _pairs(
    source: str | Path, gold: str | Path | None, ranges: Sequence[tuple[int, int]] | None
) -> Iterator[tuple[int, Sentence, Sentence | None]]:
    """The selected sentences of ``source``: (number in the file, sentence, gold or None)."""
    chosen = _selected(read_conllu(source), ranges)
    if gold is None:
        yield from ((number, sentence, None) for number, sentence in chosen)
        return
    golds = enumerate(read_conllu(gold, require_trees=True), 1)
    for number, sentence in chosen:
        # One gold reader, advanced in step with the input up to the same sentence number.
        gold_sentence = next((found for k, found in golds if k == number), None)
        if gold_sentence is None:
            raise ValueError(
                f"{gold}: no sentence {number} (the gold file is shorter than {source})"
            )
        yield number, sentence, gold_sentence


def _ranges_text(ranges: Sequence[tuple[int, int]] | None) -> str:
    if ranges is None:
        return "(all)"
    return ",".join(f"{low}-{high}" if low != high else str(low) for low, high in ranges)


def build_parser() -> argparse.ArgumentParser:
    """The command line interface of ``python -m biaffine.render``."""
    parser = cli.ArgumentParser(
        prog="python -m biaffine.render",
        description="Draw the dependency trees of a CoNLL-U file as a self-contained HTML page "
        "(inline SVG). With --gold, errors are coloured: wrong head, or right head wrong label.",
    )
    parser.add_argument(
        "input", help="CoNLL-U file to draw (the predictions, with --gold; - for stdin)"
    )
    parser.add_argument("-o", "--output", required=True, help="HTML file to write (- for stdout)")
    parser.add_argument("--gold", help="gold CoNLL-U file of the same sentences")
    parser.add_argument(
        "--sentences", help="1-based sentence numbers to draw, e.g. 1-20 or 3,7-9 (default: all)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the renderer; returns the exit status (0 ok, 2 on bad input or an unwritable output)."""
    args = build_parser().parse_args(argv)
    output = "/dev/stdout" if args.output == "-" else args.output  # not a file named "-"
    source = "/dev/stdin" if args.input == "-" else args.input
    try:
        if args.gold == "-":
            raise ValueError("--gold -: the gold file cannot be read from stdin")
        ranges = None if args.sentences is None else parse_selection(args.sentences)
        count = render_file(source, output, gold=args.gold, ranges=ranges)
    except BrokenPipeError:  # the reader went away (| head): nothing to tell it
        return silence_closed_stdout()
    except (OSError, ValueError) as error:  # ConlluError is a ValueError
        cli.print_error(f"error: {cli.describe(error)}")
        return 2
    # Not into the page when the page goes to standard output (-o /dev/stdout).
    if special_kind(output):
        cli.print_error(f"{args.output}: {count} sentence(s)")
    else:
        print(f"{args.output}: {count} sentence(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
