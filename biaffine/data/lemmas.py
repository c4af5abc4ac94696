"""Lemmas as edit scripts: the classes a lemmatizer head predicts, torch-free.

A script says how to turn a form into its lemma, so that words inflected alike share one script
("cats" -> "cat" and "dogs" -> "dog" are both "cut one character from the end"), as the
lemmatizers of UDPipe 2 and spaCy do. A script is a plain string (a vocabulary entry):

- ``"<casing>-<cut>+<add>|-<cut>+<add>"``: the first pair edits the start of the form (cut that
  many characters, then put ``add`` in front), the second its end. The casing says what the
  edits read and what the result becomes:

  - ``L``: the form lower-cased, the result as it is (a lower-case lemma: "Cats" -> "cat");
  - ``F``: the form lower-cased, then each character of the result upper-cased where the form's
    character at the same position is (past the form's end: as its last character), so a lemma
    keeps the form's casing ("Kodak's" -> "Kodak", "HPL" -> "HPL", "01-Feb-02"): one class for
    the names a lexicon has not seen, whatever their casing;
  - ``T``: the form lower-cased, the result's first character upper-cased ("PARIS" -> "Paris");
  - ``U``: the form lower-cased, the result upper-cased ("NASA's" -> "NASA");
  - ``K``: the form as written, the result as it is (mixed case: "McDonald's" -> "McDonald").

  The edits keep the longest substring the (cased) form and lemma share, so they are as short
  as the pair allows. Example: ``"L-0+|-1+"`` for "cats" -> "cat".
- ``"=<lemma>"``: the whole lemma, where form and lemma share no character ("was" -> "be") or
  no edit script rebuilds the lemma (casing that does not round-trip, see below).

Casing works one character at a time and only where it keeps the length (``"İ".lower()`` is two
characters, ``"ß".upper()`` is "SS": such characters are left as they are), so cuts count the
same characters in the form and its lower-cased copy. :func:`script_of` checks every script it
returns by applying it, so ``apply(script_of(form, lemma), form) == lemma`` holds for every pair.

A ``_`` lemma of a form other than ``_`` is CoNLL-U for "no lemma annotated" (treebanks without
lemmas, or single words without one): it has no script (:func:`script_of` returns None), so
nothing is learnt from it.

Words with a digit have a second kind of edit, for the training lexicon's table of shapes
(:class:`biaffine.data.lexicon.Lexicon`): a **keep mask** says, character by character, whether
the lemma keeps the form's character as written (``.``), lower-cased (``l``) or not at all
(``-``), so English "420,588" -> "420588" is ``...-...``, which no prefix and suffix edit can
say; :func:`digit_shape` groups forms like "420,588" and "112,610" ("000,000") that take one
mask.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

__all__ = [
    "UNANNOTATED",
    "apply",
    "apply_mask",
    "digit_shape",
    "is_address",
    "is_annotated",
    "is_whole",
    "mask_of",
    "script_of",
    "scripts_of",
]

UNANNOTATED = "_"
"""The CoNLL-U LEMMA of a word without a lemma (unless the form itself is ``_``)."""

WHOLE = "="
"""The first character of a whole-lemma script."""

_CASINGS = ("L", "F", "T", "U", "K")
"""Casings in the order :func:`script_of` tries them: the first that rebuilds the lemma wins,
so a lower-case lemma always gets ``L``, a lemma cased as its form ``F``, and similar words get
the same script. (``F`` came after the others: models trained before it have no ``F`` scripts,
and theirs apply as they did.)"""

KEEP, LOWER, DROP = ".", "l", "-"
"""What a keep mask says of each character of the form: kept as written, lower-cased, dropped."""

_SEPARATOR = "|"
"""Between the prefix edit and the suffix edit; a prefix addition never contains it."""


_ADDRESS = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+"  # a URL with its scheme, or from www.
    r"|[^\s@]+@[^\s@]+\.[a-z]{2,}"  # an e-mail address
    r"|(?:[\w-]+\.)+(?:com|org|net|edu|gov|info|biz|io)(?:/\S*)?",  # a domain of these
    re.IGNORECASE,
)


def is_address(form: str) -> bool:
    """Whether ``form`` is a web or e-mail address, a word whose lemma is its form.

    UD English EWT's training file keeps the form of 244 of its 246 such words (the other two
    are one odd annotation); no script learnt from words says so, and an unseen address took
    whatever script its characters suggested: lower-cased ("http://en.wikipedia.org/wiki/cubism"),
    or a rare script's ending ("...@paulhastings.com-notebook.url"). File names
    ("TEXT.htm") are not addresses: EWT lower-cases them.
    """
    # Most words have none of these characters: they are answered without the expression.
    marked = "." in form or "@" in form or ":" in form
    return marked and _ADDRESS.fullmatch(form) is not None


def is_annotated(form: str, lemma: str) -> bool:
    """Whether ``lemma`` is a lemma and not CoNLL-U's "none given" (``_`` for a form not ``_``)."""
    return lemma != UNANNOTATED or form == UNANNOTATED


def script_of(form: str, lemma: str) -> str | None:
    """The edit script that turns ``form`` into ``lemma``.

    Args:
        form: a word as written.
        lemma: its lemma.

    Returns:
        The script (see the module docstring), an edit script where one rebuilds the lemma and
        a whole-lemma script otherwise; None for an unannotated lemma (:func:`is_annotated`).
    """
    if not is_annotated(form, lemma):
        return None
    return next(_scripts(form, lemma))


def scripts_of(form: str, lemma: str) -> list[str]:
    """Every script that turns ``form`` into ``lemma``, :func:`script_of`'s first.

    The whole lemma comes last; none for an unannotated lemma. A model trained before a casing
    existed knows the scripts of the others only: its class for a (form, lemma) pair is the
    first of these its vocabulary holds.
    """
    return list(_scripts(form, lemma)) if is_annotated(form, lemma) else []


def _scripts(form: str, lemma: str) -> Iterator[str]:
    for casing in _CASINGS:
        script = _edit_script(casing, form, lemma)
        if script is not None and apply(script, form) == lemma:
            yield script
    yield WHOLE + lemma


def is_whole(script: str) -> bool:
    """Whether ``script`` writes a whole lemma, whatever the form (``=be`` of "was")."""
    return script.startswith(WHOLE)


def apply(script: str, form: str) -> str | None:
    """The lemma that ``script`` makes of ``form``.

    Args:
        script: a script of :func:`script_of`.
        form: the word to lemmatize.

    Returns:
        The lemma; None when the script cuts more characters than the form has (it was made
        for longer words; an edit script always keeps at least one character of the form), or
        leaves only whitespace, which no CoNLL-U column holds (" s" cut by one: " ").

    Raises:
        ValueError: ``script`` is not a script.
    """
    if is_whole(script):
        return script[len(WHOLE) :]
    casing, prefix_cut, prefix, suffix_cut, suffix = _parse(script)
    source = form if casing == "K" else _lower(form)
    if prefix_cut + suffix_cut >= len(source):
        return None
    result = prefix + source[prefix_cut : len(source) - suffix_cut] + suffix
    if not result.strip():
        return None
    if casing == "T":
        return _upper(result[:1]) + result[1:]
    if casing == "F":
        return _cased_as(result, form)
    return _upper(result) if casing == "U" else result


def _edit_script(casing: str, form: str, lemma: str) -> str | None:
    """The prefix and suffix edits around the longest common substring, under ``casing``.

    None when the (cased) form and lemma share no character, or the prefix addition holds the
    separator.
    """
    source, target = (form, lemma) if casing == "K" else (_lower(form), _lower(lemma))
    start, lemma_start, size = _longest_common_substring(source, target)
    prefix = target[:lemma_start]
    if size == 0 or _SEPARATOR in prefix:
        return None
    suffix_cut = len(source) - start - size
    suffix = target[lemma_start + size :]
    return f"{casing}-{start}+{prefix}{_SEPARATOR}-{suffix_cut}+{suffix}"


@functools.lru_cache(maxsize=1 << 14)
def _parse(script: str) -> tuple[str, int, str, int, str]:
    """(casing, prefix cut, prefix addition, suffix cut, suffix addition) of an edit script.

    Kept for the scripts seen last (a model has a few thousand): a word whose best script's
    lemma is unknown tries its runners-up, and Szeged's unseen words parsed each script anew.

    Raises:
        ValueError: not an edit script.
    """
    casing, rest = script[:1], script[1:]
    prefix_edit, separator, suffix_edit = rest.partition(_SEPARATOR)
    if casing not in _CASINGS or not separator:
        raise ValueError(f"{script!r} is not a lemma edit script")
    prefix_cut, prefix = _parse_edit(prefix_edit, script)
    suffix_cut, suffix = _parse_edit(suffix_edit, script)
    return casing, prefix_cut, prefix, suffix_cut, suffix


def _parse_edit(edit: str, script: str) -> tuple[int, str]:
    """(cut, addition) of ``-<cut>+<addition>``; ``script`` names the script in the error."""
    cut, plus, added = edit.partition("+")
    if not (cut.startswith("-") and cut[1:].isascii() and cut[1:].isdigit() and plus):
        raise ValueError(f"{script!r} is not a lemma edit script")
    return int(cut[1:]), added


def _longest_common_substring(a: str, b: str) -> tuple[int, int, int]:
    """(start in a, start in b, length) of the longest common substring, the first in ``a``.

    Ties go to the earliest start in ``a``, then in ``b``; length 0 when none is shared.
    Dynamic programming over one row of ``b``: O(len(a) * len(b)), words are short.
    """
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i, char in enumerate(a, start=1):
        current = [0] * (len(b) + 1)
        for j, other in enumerate(b, start=1):
            if char == other:
                current[j] = previous[j - 1] + 1
                if current[j] > best[2]:  # strictly: a tie ends later in a, or later in b
                    best = (i - current[j], j - current[j], current[j])
        previous = current
    return best


def _lower(text: str) -> str:
    """``text`` lower-cased one character at a time (``str.lower``'s final sigma is contextual).

    Characters whose lower case is longer ("İ") stay as they are, so that positions in the text
    and in its lower-cased copy agree.
    """
    if "Σ" not in text:  # str.lower then maps each character alone: the same where no length
        lowered = text.lower()  # changed, in C
        if len(lowered) == len(text):
            return lowered
    return "".join(c if len(lower := c.lower()) != 1 else lower for c in text)


def _cased_as(text: str, form: str) -> str:
    """``text`` upper-cased at each position where ``form`` is (past its end: as its last)."""
    last = len(form) - 1
    return "".join(_upper(c) if form[min(i, last)].isupper() else c for i, c in enumerate(text))


def _upper(text: str) -> str:
    """``text`` upper-cased one character at a time; "ß" (upper case "SS") and the like stay."""
    upper_cased = text.upper()  # each character alone, in C: the same where no length changed
    if len(upper_cased) == len(text):
        return upper_cased
    return "".join(c if len(upper := c.upper()) != 1 else upper for c in text)


def digit_shape(form: str) -> str | None:
    """The shape of a form with a digit, None for one without.

    Each digit becomes ``0``, each upper-case letter ``A``, each lower-case one ``a``; other
    characters stay: "01-Feb-02" -> "00-Aaa-00", "420,588" -> "000,000". One character per
    character, so a mask made for a shape fits every form of it.
    """
    if not any(c.isdigit() for c in form):
        return None
    return "".join(
        "0" if c.isdigit() else "A" if c.isupper() else "a" if c.islower() else c for c in form
    )


def mask_of(form: str, lemma: str) -> str | None:
    """The keep mask that makes ``lemma`` of ``form`` (see the module docstring), or None.

    Each character of the form is matched, left to right, to the lemma's next one as written,
    else lower-cased, else dropped: the earliest match, so the mask is one of a kind for each
    pair, and it exists when the lemma is a subsequence of the form (some characters
    lower-cased). ``apply_mask(mask_of(form, lemma), form) == lemma`` wherever it is not None.
    """
    mask = []
    matched = 0
    for char in form:
        if matched < len(lemma) and char == lemma[matched]:
            mask.append(KEEP)
        elif matched < len(lemma) and _lower(char) == lemma[matched]:
            mask.append(LOWER)
        else:
            mask.append(DROP)
            continue
        matched += 1
    return "".join(mask) if matched == len(lemma) else None


def apply_mask(mask: str, form: str) -> str:
    """The lemma that the keep ``mask`` makes of ``form`` (as long as the mask).

    Raises:
        ValueError: the mask and the form differ in length.
    """
    if len(mask) != len(form):
        raise ValueError(f"a keep mask of {len(mask)} characters for a form of {len(form)}")
    pairs = zip(mask, form, strict=True)
    return "".join(char if how == KEEP else _lower(char) for how, char in pairs if how != DROP)
