"""Multi-word token expansion (rawtext.mwt): dictionary, casing, suffix rules, plain data."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from rawtext import MwtExpander
from rawtext.mwt import _cased, lowered


def conllu(*tokens: tuple[str, ...]) -> io.StringIO:
    """One sentence per token: ``(form, word1, word2, ...)`` as a range line and its words."""
    blocks = []
    for form, *words in tokens:
        lines = [f"1-{len(words)}\t{form}" + "\t_" * 8]
        lines += [f"{k}\t{word}" + "\t_" * 8 for k, word in enumerate(words, 1)]
        blocks.append("\n".join([*lines, f"{len(words) + 1}\tx" + "\t_" * 8]) + "\n\n")
    return io.StringIO("".join(blocks))


FRENCH = [("du", "de", "le")] * 3 + [("Du", "De", "le"), ("du", "de", "les"), ("aux", "à", "les")]
SPANISH = [
    ("hazlo", "haz", "lo"),
    ("dilo", "di", "lo"),
    ("cómpralo", "compra", "lo"),
    ("dámelo", "da", "me", "lo"),
    ("del", "de", "el"),
]
GERMAN = [("zum", "zu", "dem"), ("zur", "zu", "der"), ("im", "in", "dem"), ("vom", "von", "dem")]


def test_the_dictionary_gives_the_most_frequent_expansion_cased_like_the_token() -> None:
    expander = MwtExpander.from_conllu(conllu(*FRENCH))
    assert expander.lookup("du") == ["de", "le"]
    assert expander.lookup("Du") == ["De", "le"]
    assert expander.lookup("DU") == ["DE", "LE"]
    assert expander("Aux") == ["À", "les"]
    assert expander("AUX") == ["À", "LES"]
    assert expander.lookup("des") is None


def test_casing_is_copied_while_the_words_spell_the_token() -> None:
    expander = MwtExpander.from_conllu(
        conllu(("bbc's", "bbc", "'s"), ("mcdonalds", "mcdonald", "s"), ("au", "à", "le"))
    )
    assert expander("BBC's") == ["BBC", "'s"]
    assert expander("McDonalds") == ["McDonald", "s"]
    assert expander("DONt") == ["DONt"]  # unseen, no rule: one word
    assert expander("Au") == ["À", "le"]
    # One capital letter is no shouting: "À" (Portuguese à = a a) is "A a", not "A A".
    assert _cased("À", ["a", "a"]) == ["A", "a"]


TURKISH = [("içindeydi", "içinde", "ydi"), ("evdeki", "evde", "ki"), ("okuldaki", "okulda", "ki")]


def test_turkish_dotted_capital_i_keeps_its_letters_and_finds_its_lower_case() -> None:
    # "İ".lower() is two code points: İçindeydi missed içindeydi, and İMKB'deki came out as
    # "I\u0307mkb'de", the casing slipping by the combining dot.
    expander = MwtExpander.from_conllu(conllu(*TURKISH))
    assert expander.lookup("İçindeydi") == ["İçinde", "ydi"]
    assert expander("İMKB'deki") == ["İMKB'de", "ki"]  # by the rule "ki": ("", "ki")
    assert expander("İSTANBULDAKİ") == ["İSTANBULDA", "Kİ"]
    assert expander.is_always("İçindeydi")
    assert lowered("İMKB") == "imkb"


def test_data_that_str_lower_wrote_reads_as_lowered_writes_it() -> None:
    # Expanders trained before kept "İ" as "i" and a combining dot above.
    expander = MwtExpander.from_conllu(conllu(*TURKISH))
    data = expander.to_data()
    data["dictionary"]["i\u0307çindeydi"] = data["dictionary"].pop("içindeydi")
    data["always"] = ["i\u0307çindeydi" if f == "içindeydi" else f for f in data["always"]]
    assert MwtExpander.from_data(data) == expander


def test_suffix_rules_expand_unseen_spanish_clitics() -> None:
    expander = MwtExpander.from_conllu(conllu(*SPANISH))
    # "lo" ends four training MWTs and splits off unchanged in two (hazlo, dilo): kept.
    assert expander.rules == {"lo": ("", "lo")}
    assert expander.lookup("cómelo") is None
    assert expander("cómelo") == ["cóme", "lo"]
    assert expander("Bébelo") == ["Bébe", "lo"]
    assert expander.fallback("xyz") is None
    assert expander("xyz") == ["xyz"]


@pytest.mark.parametrize("space", ["\u00a0", "\u202f", " "])
def test_a_rule_never_leaves_a_word_that_begins_or_ends_with_a_space(space: str) -> None:
    # "John\u00a0's" (one token, a no-break space inside) gave the word "John\u00a0", whose
    # FORM and LEMMA ended in the space: not CoNLL-U.
    expander = MwtExpander.from_conllu(conllu(*SPANISH))
    assert expander.fallback(f"cóme{space}lo") is None
    assert expander(f"cóme{space}lo") == [f"cóme{space}lo"]
    assert expander(f"x{space}cómelo") == [f"x{space}cóme", "lo"]


def test_the_longest_reliable_suffix_wins() -> None:
    expander = MwtExpander.from_conllu(conllu(*SPANISH), min_count=1)
    # dámelo → da me lo: the accent changes, so its rule keeps "d" and rewrites the rest.
    assert expander.rules["ámelo"] == ("a", "me", "lo")
    assert expander("hámelo") == ["ha", "me", "lo"]  # not "háme lo" by the shorter "lo"


def test_the_dictionary_comes_before_the_rules() -> None:
    expander = MwtExpander.from_conllu(conllu(*GERMAN))
    # "m" ends zum, im and vom; "n" + "dem" is right for im and vom (2 of 3): a rule.
    assert expander.rules == {"m": ("n", "dem")}
    assert expander("Zum") == ["Zu", "dem"]
    assert expander("zur") == ["zu", "der"]
    assert expander("beim") == ["bein", "dem"]  # the rule's guess for an unseen token


def test_rules_respect_min_count_and_min_precision() -> None:
    tokens = [("ab", "a", "b")] * 2 + [("cb", "q", "x")] * 3
    assert "b" not in MwtExpander.from_conllu(conllu(*tokens)).rules  # right 2 of 5
    assert MwtExpander.from_conllu(conllu(*tokens), min_precision=0.4).rules["b"] == ("", "b")
    assert "b" not in MwtExpander.from_conllu(conllu(*tokens), min_count=3, min_precision=0.1).rules


def test_plain_data_round_trips_through_json() -> None:
    expander = MwtExpander.from_conllu(conllu(*SPANISH, *FRENCH))
    again = MwtExpander.from_data(json.loads(json.dumps(expander.to_data())))
    assert again == expander
    for form in ["Du", "cómelo", "xyz", "DEL"]:
        assert again(form) == expander(form)


def with_plain_words(*forms: str) -> str:
    """One sentence per form, the form a single-word token."""
    return "".join(f"1\t{form}" + "\t_" * 8 + "\n\n" for form in forms)


def test_always_holds_the_tokens_split_in_nine_tenths_of_their_occurrences() -> None:
    split = conllu(*[("du", "de", "le")] * 9, *[("des", "de", "les")] * 8).getvalue()
    plain = with_plain_words("du", "des", "des", "DES")  # "des": 8 of 11
    expander = MwtExpander.from_conllu(io.StringIO(split + plain))
    assert expander.always == frozenset({"du"})  # 9 of 10: ALWAYS_SHARE exactly
    assert expander.is_always("Du")
    assert not expander.is_always("des")
    assert not expander.is_always("x")  # never split


def test_data_written_before_always_reads_without_it() -> None:
    data = MwtExpander.from_conllu(conllu(*FRENCH)).to_data()
    assert data["always"] == ["aux", "du"]
    del data["always"]
    assert MwtExpander.from_data(data).always == frozenset()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"format": "other", "version": 1}, "not 'rawtext.mwt' version 1 data: found 'other'"),
        ({"format": "rawtext.mwt", "version": 1, "rules": {}}, "'dictionary' must be a mapping"),
        (
            {"format": "rawtext.mwt", "version": 1, "dictionary": {"du": "de le"}, "rules": {}},
            r"dictionary\['du'\] must be a list of strings",
        ),
        (
            {"format": "rawtext.mwt", "version": 1, "dictionary": {}, "rules": {}, "always": "du"},
            "'always' must be a list of strings",
        ),
    ],
)
def test_bad_data_is_refused_in_words(data: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        MwtExpander.from_data(data)


def load_coverage_script():
    path = Path(__file__).parents[2] / "experiments" / "mwt_coverage.py"
    spec = importlib.util.spec_from_file_location("mwt_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_coverage_table_counts_dictionary_and_rules(tmp_path: Path) -> None:
    coverage = load_coverage_script()
    train, test = tmp_path / "x-ud-train.conllu", tmp_path / "x-ud-test.conllu"
    train.write_text(conllu(*SPANISH).getvalue(), encoding="utf-8")
    # hazlo: in the dictionary; cómelo: by the "lo" rule; dáselo: the rule gets it wrong.
    test.write_text(
        conllu(
            ("hazlo", "haz", "lo"), ("cómelo", "cóme", "lo"), ("dáselo", "da", "se", "lo")
        ).getvalue(),
        encoding="utf-8",
    )
    cells = coverage.row(tmp_path / "UD_X-Y", train, test).strip("| ").split(" | ")
    assert cells == ["X-Y", "5", "3", "5", "1", "33.33%", "66.67%", "50.00% of 2"]
    test.write_text("1\tx" + "\t_" * 8 + "\n\n", encoding="utf-8")
    train.write_text("1\tx" + "\t_" * 8 + "\n\n", encoding="utf-8")
    assert coverage.row(tmp_path / "UD_X-Y", train, test) is None
