"""How well a lemma lexicon of the training data lemmatizes the test words, per treebank.

For every treebank folder under the root (``$UD_ROOT`` by default) with a training and a test
file, prints one Markdown row on the test words with a lemma: the share the lexicon
(:func:`biaffine.data.lexicon.build_lexicon`) finds and the accuracy on those, then the test
Lemmas of the lexicon alone, unknown words given their form, under three rules: (a) keyed by
(form, gold UPOS), then by form; (b) by form alone; (c) rule (a), then the same lookups with the
form lower-cased. A second table sweeps the form-only threshold (all treebanks pooled).

``--predicted`` compares the lexicon with a model's lemmas word by word: give the model's
output on one treebank's test file (``predict.py columns=all overwrite_columns=true``) and the
treebank (``--treebank UD_French-Sequoia``); the words are split by the key that finds them,
keyed by the predicted UPOS as at prediction time, the form-only ones by the share of their
majority lemma, with the accuracy of the lexicon and of the model on each part.
Torch-free; about a minute for the 21 treebanks.

Usage::

    PYTHONPATH=. python experiments/lemma_lexicon.py [UD_ROOT]     # the tables of docs/lemmas.md
    PYTHONPATH=. python experiments/lemma_lexicon.py --treebank UD_French-Sequoia \
        --predicted out.conllu
"""

from __future__ import annotations

import argparse
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lemmas import is_annotated
from biaffine.data.lexicon import MIN_FORM_SHARE, Lexicon, build_lexicon

HEADER = (
    "| treebank | test words with lemma | found | right when found | (a) form+UPOS, form "
    "| (b) form | found by lower-cased form+UPOS | right of those "
    "| found by lower-cased form | right of those |\n"
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
)
SHARES = (0.0, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 1.0)
"""The form-only thresholds swept, and the lower bounds of the buckets of form-only words."""

Word = tuple[str, str, str]
"""(form, UPOS, gold lemma) of a test word."""
Rule = Callable[[Lexicon, str, str], str | None]
"""A lookup: (lexicon, form, UPOS) -> lemma or None."""


def by_form_and_upos(lexicon: Lexicon, form: str, upos: str) -> str | None:
    """Rule (a): the lexicon's own lookup (:meth:`Lexicon.lemma`)."""
    return lexicon.lemma(form, upos)


def by_form(lexicon: Lexicon, form: str, upos: str) -> str | None:
    """Rule (b): form-only keys (the lookup without a UPOS)."""
    return lexicon.lemma(form, None)


def lower_cased_and_upos(lexicon: Lexicon, form: str, upos: str) -> str | None:
    """The lower-cased step of rule (a) alone."""
    return lexicon.tagged.get((form.lower(), upos))


def lower_cased(lexicon: Lexicon, form: str, upos: str) -> str | None:
    """A lower-cased lookup by form alone (rejected)."""
    return lexicon.forms.get(form.lower())


def test_words(sentences: Sequence[Sentence]) -> list[Word]:
    """The (form, UPOS, lemma) of every word with a lemma."""
    return [
        (form, upos, lemma)
        for s in sentences
        for form, upos, lemma in zip(s.forms, s.upos, s.lemmas, strict=True)
        if is_annotated(form, lemma)
    ]


def score(lexicon: Lexicon, words: Sequence[Word], rule: Rule) -> tuple[int, int, int]:
    """(found, right among the found, right overall with the form for the rest)."""
    found = right_found = right = 0
    for form, upos, gold in words:
        lemma = rule(lexicon, form, upos)
        found += lemma is not None
        right_found += lemma == gold
        right += (form if lemma is None else lemma) == gold
    return found, right_found, right


def row(name: str, train: list[Sentence], words: list[Word]) -> str:
    """The table row of one treebank."""
    lexicon = build_lexicon(train)
    found, right_found, _ = score(lexicon, words, by_form_and_upos)
    cells = [name, f"{len(words):,}", _percent(found, len(words)), _percent(right_found, found)]
    for rule in (by_form_and_upos, by_form):
        cells.append(_percent(score(lexicon, words, rule)[2], len(words)))
    # The words the exact lookups miss, on which a lower-cased lookup is tried.
    missed = [w for w in words if w[:2] not in lexicon.tagged and w[0] not in lexicon.forms]
    for rule in (lower_cased_and_upos, lower_cased):
        found_lowered, right_lowered, _ = score(lexicon, missed, rule)
        cells += [_percent(found_lowered, len(words)), _percent(right_lowered, found_lowered)]
    return "| " + " | ".join(cells) + " |"


def sweep(treebanks: Sequence[tuple[list[Sentence], list[Word]]]) -> str:
    """The threshold table, pooled over the treebanks.

    Per form-only threshold: the words found by form alone (no (form, gold UPOS) key) and how
    many of those the lexicon gets right, and rules (a) and (b) overall.
    """
    lines = [
        "| min form share | found by form only | right of those | (a) overall | (b) overall |",
        "|--:|--:|--:|--:|--:|",
    ]
    for share in SHARES:
        by_form_only = right_form_only = right_a = right_b = total = 0
        for train, words in treebanks:
            lexicon = build_lexicon(train, min_form_share=share)
            for form, upos, gold in words:
                if (form, upos) not in lexicon.tagged and form in lexicon.forms:
                    by_form_only += 1
                    right_form_only += lexicon.forms[form] == gold
            right_a += score(lexicon, words, by_form_and_upos)[2]
            right_b += score(lexicon, words, by_form)[2]
            total += len(words)
        cells = [f"{share:.2f}", f"{by_form_only:,}", _percent(right_form_only, by_form_only)]
        cells += [_percent(right_a, total), _percent(right_b, total)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare(train: list[Sentence], gold: list[Sentence], predicted: list[Sentence]) -> str:
    """The lexicon against a model's lemmas on the same words, in two tables (see above)."""
    lexicon, everything = build_lexicon(train), build_lexicon(train, min_form_share=0.0)
    shares = form_shares(train)
    with_upos: defaultdict[str, Counter[str]] = defaultdict(Counter)
    form_only: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for ours, theirs in zip(gold, predicted, strict=True):
        rows = zip(ours.forms, ours.lemmas, theirs.upos, theirs.lemmas, strict=True)
        for form, lemma, upos, model_lemma in rows:
            if is_annotated(form, lemma):
                part, found = _part(lexicon, form, upos)
                _count(with_upos[part], found, model_lemma, lemma)
                if form in everything.forms:
                    bound = max(b for b in SHARES if shares[form] >= b)
                    part = f"majority share >= {bound:.2f}"
                    _count(form_only[part], everything.forms[form], model_lemma, lemma)
    return (
        _table("found (predicted UPOS) by", with_upos)
        + "\n\nTraining forms looked up alone, by the share of their majority lemma:\n\n"
        + _table("form", form_only)
    )


def _part(lexicon: Lexicon, form: str, upos: str) -> tuple[str, str | None]:
    """The step of :meth:`Lexicon.lemma` that finds a test word, and its lemma (None: none)."""
    if (form, upos) in lexicon.tagged:
        return "1. form + UPOS", lexicon.tagged[form, upos]
    if form in lexicon.forms:
        return "2. form", lexicon.forms[form]
    found = lexicon.lemma(form, upos)
    return ("4. none (model alone)", None) if found is None else ("3. lower-cased + UPOS", found)


def _count(counts: Counter[str], found: str | None, model_lemma: str, lemma: str) -> None:
    counts["words"] += 1
    counts["lexicon"] += (model_lemma if found is None else found) == lemma
    counts["model"] += model_lemma == lemma


def _table(name: str, parts: Mapping[str, Counter[str]]) -> str:
    lines = [f"| {name} | words | lexicon right | model right |", "|---|--:|--:|--:|"]
    for part in sorted(parts):
        counts = parts[part]
        cells = [part, f"{counts['words']:,}"]
        cells += [_percent(counts[key], counts["words"]) for key in ("lexicon", "model")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def form_shares(train: Sequence[Sentence]) -> dict[str, float]:
    """Each training form's share of occurrences that have its majority lemma."""
    counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for s in train:
        for form, lemma in zip(s.forms, s.lemmas, strict=True):
            if is_annotated(form, lemma):
                counts[form][lemma] += 1
    return {form: max(c.values()) / c.total() for form, c in counts.items()}


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "-"


def _files(folder: Path) -> tuple[Path, Path] | None:
    trains, tests = sorted(folder.glob("*-train.conllu")), sorted(folder.glob("*-test.conllu"))
    return (trains[0], tests[0]) if trains and tests else None


def main() -> None:
    """Prints the tables for the treebanks under the root, or the comparison with a model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=os.environ.get("UD_ROOT"), type=Path)
    parser.add_argument("--treebank", help="the treebank folder --predicted is on")
    parser.add_argument("--predicted", type=Path, help="a model's output on its test file")
    args = parser.parse_args()
    if args.root is None or not args.root.is_dir():
        parser.error("give the folder of UD_* treebanks (or set UD_ROOT)")
    if args.predicted is not None:
        files = _files(args.root / (args.treebank or ""))
        if args.treebank is None or files is None:
            parser.error("--predicted needs --treebank, a folder with train and test files")
        train, test = (list(read_conllu(path)) for path in files)
        print(compare(train, test, list(read_conllu(args.predicted))))
        return
    print(HEADER)
    pooled = []
    for folder in sorted(args.root.glob("UD_*")):
        files = _files(folder)
        if files is None:
            continue
        train = list(read_conllu(files[0]))
        words = test_words(list(read_conllu(files[1])))
        if words and test_words(train):
            print(row(folder.name.removeprefix("UD_"), train, words))
            pooled.append((train, words))
    print(f"\nForm-only threshold (default {MIN_FORM_SHARE}), all treebanks pooled:\n")
    print(sweep(pooled))


if __name__ == "__main__":
    report_user_errors(main)
