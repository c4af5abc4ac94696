"""The word-level sentence model: flags, decisions, relabelling, checkpoints and a tiny run."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from builders import biaffine_parser, sized_vocabs
from hypothesis import given
from hypothesis import strategies as st
from segmenter_builders import head, random_model, scoring_outlasts_the_budget, small_vocab

from biaffine.export import export
from biaffine.segmenting import (
    Segmenter,
    SegmenterCheckpointError,
    SpanScores,
    checkpoint,
    score_spans,
    segment_spans,
    sentence_training,
    sentences,
)
from biaffine.segmenting.sentence_training import (
    CONTEXTS,
    MARGINS,
    METRICS,
    SentenceSettings,
    choose_context,
    prepare,
    train,
)
from biaffine.segmenting.sentences import (
    TOKEN_FLAGS,
    SentenceModel,
    paragraph_tokens,
    reading_runs,
    sentence_odds,
    token_flags,
)
from biaffine.segmenting.spans import SpanCounts
from biaffine.segmenting.training import load_documents
from biaffine.segmenting.windows import log_probs
from rawtext.labels import (
    MWT_END,
    MWT_SENTENCE_END,
    N_CLASSES,
    NONE,
    SENTENCE_END,
    TOKEN_END,
    LabelledText,
    labelled_documents,
)
from rawtext.segment import segment

# "Hi THERE , don't go" "Bye !" in one paragraph, "Next" in another; "don't" a multi-word token.
TEXT = "Hi THERE, don't go\nBye!\n\nNext\n"


def classes_of(text: str, ends: dict[int, int]) -> np.ndarray:
    """uint8 classes: NONE but at the given character positions."""
    classes = np.full(len(text), NONE, dtype=np.uint8)
    for position, label in ends.items():
        classes[position] = label
    return classes


# Last characters: Hi 1, THERE 7, "," 8, don't 14 (MWT), go 17, Bye 21, ! 22 (sentence) | Next 28
CLASSES = classes_of(
    TEXT,
    {1: TOKEN_END, 7: TOKEN_END, 8: TOKEN_END, 14: MWT_END, 17: SENTENCE_END}
    | {21: TOKEN_END, 22: SENTENCE_END, 28: SENTENCE_END},
)


def test_token_flags_read_the_surface_and_the_whitespace_after() -> None:
    tokens = paragraph_tokens(TEXT, CLASSES)[0]
    flags = token_flags(TEXT, tokens)
    assert [t.form for t in tokens] == ["Hi", "THERE", ",", "don't", "go", "Bye", "!"]
    table = {
        t.form: dict(zip(TOKEN_FLAGS, row.tolist(), strict=True))
        for t, row in zip(tokens, flags, strict=True)
    }
    assert table["Hi"] == dict.fromkeys(TOKEN_FLAGS, 0.0) | {"capitalized": 1.0}
    assert table["THERE"]["all_capitals"] == 1.0
    assert table["THERE"]["no_space_after"] == 1.0
    assert table[","]["no_letter_or_digit"] == 1.0
    assert table[","]["ends_in_clause_punct"] == 1.0
    assert table["go"]["line_break_after"] == 1.0
    assert table["go"]["capitalized"] == 0.0
    assert table["Bye"]["no_space_after"] == 1.0
    assert table["!"]["ends_in_final_punct"] == 1.0
    assert table["!"]["line_break_after"] == 1.0
    last = paragraph_tokens("end", classes_of("end", {2: SENTENCE_END}))[0]
    assert token_flags("end", last)[0, TOKEN_FLAGS.index("text_ends_after")] == 1.0


def test_sentence_odds_are_the_end_classes_against_the_inside_ones() -> None:
    tokens = paragraph_tokens(TEXT, CLASSES)[0]
    probs = torch.full((len(TEXT), N_CLASSES), 0.1)
    probs[17] = torch.tensor([0.0, 0.1, 0.3, 0.2, 0.4])  # "go": ends 0.7 against 0.3
    odds = sentence_odds(probs.log(), tokens)
    assert odds[4].item() == pytest.approx(np.log(0.7 / 0.3), abs=1e-6)
    assert odds[0].item() == pytest.approx(0.0, abs=1e-6)


def test_relabel_moves_sentence_ends_only_and_keeps_multi_word_tokens() -> None:
    paragraphs = [tokens for tokens in paragraph_tokens(TEXT, CLASSES) if len(tokens) > 1]
    every = [torch.ones(len(tokens), dtype=torch.bool) for tokens in paragraphs]
    relabelled = SentenceModel.relabel(CLASSES, paragraphs, every)
    assert relabelled[14] == MWT_SENTENCE_END  # still a multi-word token
    assert [relabelled[p] for p in (1, 7, 8, 17, 21)] == [SENTENCE_END] * 5
    assert relabelled[22] == SENTENCE_END
    assert relabelled[28] == SENTENCE_END
    none = [torch.zeros(len(tokens), dtype=torch.bool) for tokens in paragraphs]
    joined = SentenceModel.relabel(CLASSES, paragraphs, none)
    assert joined[17] == TOKEN_END
    assert joined[14] == MWT_END
    assert joined[22] == SENTENCE_END  # a paragraph's last token ends its sentence anyway
    for changed in (relabelled, joined):
        assert segment_spans(TEXT, changed)[0] == segment_spans(TEXT, CLASSES)[0]
    assert len(segment_spans(TEXT, joined)[1]) == 2
    assert len(segment_spans(TEXT, relabelled)[1]) == 8


@pytest.fixture
def model(tiny_bert: Path) -> SentenceModel:
    torch.manual_seed(0)
    built = SentenceModel({"model": str(tiny_bert)}, hidden=6, odds_weight=0.25, bias=-0.5)
    with torch.no_grad():
        for parameter in built.parameters():
            parameter.normal_()
    return built.eval()


def test_decide_adds_the_weighted_odds_and_the_bias(model: SentenceModel) -> None:
    paragraphs = [paragraph_tokens(TEXT, CLASSES)[0]]
    probs = torch.full((len(TEXT), N_CLASSES), 0.2).log()
    probs[17] = torch.tensor([0.0, 0.1, 0.8, 0.05, 0.05]).log()  # "go": odds log(0.85/0.15)
    logits = [torch.zeros(7)]
    logits[0][0] = 0.51  # "Hi": 0.51 - 0.5 > 0
    logits[0][1] = 0.49  # "THERE": below the bias
    model.odds_weight, model.bias = 0.25, -0.5
    ends = model.decide(logits, paragraphs, probs)[0].tolist()
    go = 0.25 * np.log(0.85 / 0.15) - 0.5  # -0.066: not an end
    assert go < 0
    assert ends == [True, False, False, False, False, False, False]
    model.odds_weight = 1.0
    assert model.decide(logits, paragraphs, probs)[0].tolist()[4] is True


def test_resplit_decides_on_the_classes_where_segment_reads_them(
    model: SentenceModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A class on whitespace (or inside an emoji) moves where segment() reads it; relabelling
    # the token's last character left it in place, to overrule "no sentence end" there and
    # to turn a multi-word token into a plain one.
    text = "don't\nstop \U0001f44d\U0001f3fd see you"
    classes = np.zeros(len(text), np.uint8)
    classes[5] = MWT_SENTENCE_END  # on the line break after "don't"
    classes[text.index("\U0001f44d")] = SENTENCE_END  # before the emoji's skin tone
    classes[[text.index("stop") + 3, text.index("see") + 2, len(text) - 1]] = TOKEN_END
    never = [torch.zeros(n, dtype=torch.bool) for n in (5,)]
    monkeypatch.setattr(model, "read_logits", lambda *_: [torch.zeros(5)])
    monkeypatch.setattr(model, "decide", lambda *_: never)
    found = model.resplit(text, classes, torch.zeros(len(text), N_CLASSES))
    document = segment(text, found, lambda form: ["do", "n't"] if form == "don't" else [form])
    assert [[token.words for token in s.tokens] for s in document.sentences()] == [
        [("do", "n't"), ("stop",), ("\U0001f44d\U0001f3fd",), ("see",), ("you",)]
    ]


def test_logits_of_a_paragraph_do_not_depend_on_its_batch(model: SentenceModel) -> None:
    text = TEXT * 3
    classes = np.concatenate([CLASSES] * 3)
    paragraphs = paragraph_tokens(text, classes)
    together = model.logits(text, paragraphs)
    for paragraph, batched in zip(paragraphs, together, strict=True):
        alone = model.logits(text, [paragraph])[0]
        torch.testing.assert_close(alone, batched, atol=1e-5, rtol=1e-5)


def test_runs_of_like_length_are_read_together_and_come_back_in_order(
    model: SentenceModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TEXT * 12
    tokens = [t for p in paragraph_tokens(text, np.concatenate([CLASSES] * 12)) for t in p]
    runs = [tokens[:60], tokens[:2], tokens[1:61], tokens[2:4]]
    widths: list[list[int]] = []
    forward = model.forward
    monkeypatch.setattr(sentences, "BATCH_TOKENS", 120)
    monkeypatch.setattr(
        model,
        "forward",
        lambda forms, flags: widths.append(list(map(len, forms))) or forward(forms, flags),
    )
    together = model.logits(text, runs)
    assert widths == [[2, 2], [60, 60]]  # not the short runs padded to 60
    for run, batched in zip(runs, together, strict=True):
        torch.testing.assert_close(model.logits(text, [run])[0], batched, atol=1e-5, rtol=1e-5)


def test_a_checkpoint_with_a_sentence_model_segments_as_the_model_in_memory(
    model: SentenceModel, tmp_path: Path
) -> None:
    vocab = small_vocab()
    network = random_model(vocab, rnn_hidden=6)
    path = tmp_path / "best.pt"
    checkpoint.save(path, network, vocab, treebank="UD_X", sentences=model)
    loaded = checkpoint.load(path)
    assert loaded.sentences is not None
    assert loaded.sentences.config() == model.config()
    with torch.no_grad():  # the checkpoint stores the sentence model's weights as float16
        for parameter in model.parameters():
            parameter.copy_(parameter.half().float())
    text = TEXT * 4
    scores = log_probs(network, vocab, text)
    expected = model.resplit(text, network.decide(scores).numpy(), scores)
    np.testing.assert_array_equal(Segmenter(loaded).classes(text), expected)
    for empty in ("", " \n\n\t"):  # nothing to read: no paragraph reaches the transformer
        assert not Segmenter(loaded).segment(empty).paragraphs
    assert checkpoint.load(path).sentences.odds_weight == 0.25
    payload = torch.load(path, weights_only=True)
    assert not any(key.startswith("words.model") for key in payload["sentences"]["weights"])
    assert {w.dtype for w in payload["sentences"]["weights"].values()} == {torch.float16}


def test_sentence_weights_that_do_not_fit_are_refused_in_one_line(
    model: SentenceModel, tmp_path: Path
) -> None:
    vocab = small_vocab()
    path = tmp_path / "best.pt"
    checkpoint.save(
        path, random_model(vocab, rnn_hidden=6), vocab, treebank="UD_X", sentences=model
    )
    payload = torch.load(path, weights_only=True)
    payload["sentences"]["config"]["hidden"] = 7
    torch.save(payload, path)
    with pytest.raises(SegmenterCheckpointError) as caught:
        checkpoint.load(path)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def tiny_run(
    ewt_dir: Path, tiny_bert: Path, tmp_path: Path, settings: SentenceSettings
) -> tuple[Path, Path, dict]:
    """A sentence model trained on 120 EWT train sentences: its treebank, run folder, result."""
    folder = tmp_path / "UD_Tiny"
    folder.mkdir()
    head(ewt_dir / "en_ewt-ud-train.conllu", folder / "train.conllu", 120)
    head(ewt_dir / "en_ewt-ud-dev.conllu", folder / "dev.conllu", 60)
    config = {"root": str(tmp_path), "treebank": "UD_Tiny", "download": False, "base_url": ""}
    config |= {"train": "train.conllu", "dev": "dev.conllu", "test": "dev.conllu"}
    config |= {"discover": False, "dev_fraction": 0.1, "split_seed": 1}
    data = load_documents(config)
    vocab = small_vocab()
    base = tmp_path / "segmenter.pt"
    checkpoint.save(base, random_model(vocab, rnn_hidden=6), vocab, treebank="UD_Tiny")
    run = tmp_path / "run"
    run.mkdir()
    model = {"transformer": {"model": str(tiny_bert)}, "hidden": 8}
    return folder, run, train(data, *prepare(base, model, settings), settings, run)


@pytest.mark.ud
def test_time_that_runs_out_while_dev_is_scored_ends_the_run_there(
    ewt_dir: Path, tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The next epoch found the time gone before its first step and was recorded all the same.
    from biaffine.segmenting import sentence_training

    scoring_outlasts_the_budget(monkeypatch, sentence_training, "_tune")
    settings = SentenceSettings(max_epochs=3, max_minutes=1.0, threads=1)
    _, run, result = tiny_run(ewt_dir, tiny_bert, tmp_path, settings)
    lines = [json.loads(line) for line in (run / METRICS).read_text().splitlines()]
    assert [line["epoch"] for line in lines[1:-1]] == [1]
    assert result["stop"] == "max_minutes"


@pytest.mark.ud
def test_a_tiny_run_writes_a_segmenter_whose_sentences_score_as_reported(
    ewt_dir: Path, tiny_bert: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = SentenceSettings(max_epochs=2, threads=1)
    folder, run, result = tiny_run(ewt_dir, tiny_bert, tmp_path, settings)
    lines = [json.loads(line) for line in (run / METRICS).read_text().splitlines()]
    assert [line["epoch"] for line in lines[1:-1]] == [1, 2]
    assert lines[-1] == result
    # A model no better than the segmenter alone on dev was written without a word.
    alone = lines[0]["segmenter_dev"]["sentences_f1"]
    assert result["beats_segmenter"] == (result["dev"]["sentences_f1"] > alone)
    warned = [r.message for r in caplog.records if r.levelname == "WARNING"]
    assert (
        any("segments worse than the segmenter" in m for m in warned) != result["beats_segmenter"]
    )
    assert result["test"] == result["dev"]
    segmenter = Segmenter.load(run / "best.pt")
    assert segmenter.sentences is not None
    assert result["margin"] in (*MARGINS, None)
    assert segmenter.sentences.margin == result["margin"]
    assert result["context"] in (*CONTEXTS, None)
    assert segmenter.sentences.context == result["context"]
    total = SpanScores()
    for document in labelled_documents(folder / "dev.conllu"):
        total += score_spans(document.text, document.labels, segmenter.classes(document.text))
    assert result["dev"] == total.as_dict()  # what a user of best.pt gets


@pytest.mark.ud
def test_a_model_no_better_than_the_segmenter_alone_is_reported(
    ewt_dir: Path,
    tiny_bert: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scored = sentence_training._score
    perfect = {"tokens_f1": 100.0, "sentences_f1": 100.0}

    def segmenter_perfect(documents, model):  # the segmenter alone scores 100 on dev
        found = scored(documents, model)
        return found if model is not None else SimpleNamespace(as_dict=lambda: perfect)

    monkeypatch.setattr(sentence_training, "_score", segmenter_perfect)
    _, run, result = tiny_run(ewt_dir, tiny_bert, tmp_path, SentenceSettings(max_epochs=1))
    assert result["beats_segmenter"] is False
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(f"{run / 'best.pt'} segments worse than the segmenter" in m for m in warned)
    assert Segmenter.load(run / "best.pt").sentences is not None  # written all the same


def test_the_onnx_export_refuses_a_segmenter_with_a_sentence_model(
    model: SentenceModel, tmp_path: Path
) -> None:
    vocab = small_vocab()
    path = tmp_path / "best.pt"
    network = random_model(vocab, rnn_hidden=6)
    checkpoint.save(path, network, vocab, treebank="UD_X", sentences=model)
    parser = biaffine_parser(sized_vocabs(words=20, chars=10, upos=6, rels=6)).eval()
    with pytest.raises(ValueError, match="sentence model reads a transformer"):
        export(parser, tmp_path / "out", about={}, segmenter=checkpoint.load(path))
    assert not (tmp_path / "out").exists()


def test_a_margin_reads_only_the_tokens_where_the_segmenter_is_unsure(
    model: SentenceModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TEXT * 2
    classes = np.concatenate([CLASSES] * 2)
    paragraphs = [p for p in paragraph_tokens(text, classes) if len(p) > 1]  # two alike
    probs = torch.full((len(text), N_CLASSES), 1e-4)
    probs[:, TOKEN_END] = 1.0  # sure: no sentence end anywhere (log-odds -9.2)...
    unsure = paragraphs[1][2].end - 1  # ... but at "," of the second paragraph (log-odds 0)
    probs[unsure, TOKEN_END] = probs[unsure, SENTENCE_END] = 0.5
    log_probs = probs.log()
    model.odds_weight, model.bias, model.margin = 1.0, 0.0, 3.0
    assert not model.unsure(log_probs, paragraphs[0]).any()
    picked = [False, False, True] + [False] * (len(paragraphs[1]) - 3)
    assert model.unsure(log_probs, paragraphs[1]).tolist() == picked
    read: list[list[str]] = []
    logits = model.logits
    monkeypatch.setattr(model, "logits", lambda t, runs: read.extend(runs) or logits(t, runs))
    for context, run in ((None, paragraphs[1]), (1, paragraphs[1][1:4])):
        read.clear()
        model.context = context
        gated = model.read_logits(text, paragraphs, log_probs)
        assert read == [run]  # the first paragraph is not read
        assert torch.equal(gated[0], torch.zeros(len(paragraphs[0])))
        expected = torch.zeros(len(paragraphs[1]))
        expected[2] = logits(text, [run])[0][2 - paragraphs[1].index(run[0])]
        torch.testing.assert_close(gated[1], expected)
    model.margin = None  # every token but the last
    assert model.unsure(log_probs, paragraphs[0]).tolist() == [True] * 6 + [False]  # 7 tokens


def test_reading_runs_hold_each_position_with_its_context_and_merge_what_touches() -> None:
    assert reading_runs([], 10, 2) == []
    assert reading_runs([4], 10, None) == [(0, 10)]
    assert reading_runs([0, 9], 10, 2) == [(0, 3), (7, 10)]
    assert reading_runs([2, 7], 10, 2) == [(0, 10)]  # (0, 5) and (5, 10) touch
    assert reading_runs([2, 8], 12, 1) == [(1, 4), (7, 10)]


@given(st.data(), st.integers(1, 40), st.integers(0, 6))
def test_reading_runs_cover_exactly_the_positions_contexts(
    data: st.DataObject, n: int, context: int
) -> None:
    positions = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    runs = reading_runs(positions, n, context)
    covered = {j for i in positions for j in range(max(0, i - context), min(n, i + context + 1))}
    assert {j for start, stop in runs for j in range(start, stop)} == covered
    assert all(a[1] < b[0] for a, b in itertools.pairwise(runs))  # apart, in order


def test_the_context_chosen_is_the_smallest_within_the_tolerance(
    model: SentenceModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    f1 = {None: 90.0, 8: 89.85, 16: 89.95, 32: 90.1, 64: 90.0}

    def scored(m: SentenceModel, d: object, logits: object) -> SpanScores:
        return SpanScores(sentences=SpanCounts(10_000, 10_000, round(f1[m.context] * 100)))

    monkeypatch.setattr(sentence_training, "_scored", scored)
    monkeypatch.setattr(model, "read_logits", lambda *args: [])
    document = SimpleNamespace(document=SimpleNamespace(text=""), paragraphs=[], log_probs=None)
    model.context = 4
    assert choose_context(model, [document]) == 16
    assert model.context == 4  # restored
    f1.update({8: 80.0, 16: 80.0, 32: 80.0, 64: 80.0})
    assert choose_context(model, [document]) is None


def test_sentence_training_scores_the_classes_where_inference_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A class on whitespace moves before resplit relabels it (SentenceModel.resplit); training
    # chose its weight, bias and margin on the classes as decided, left on the whitespace.
    stored = checkpoint.load(Path(__file__).parents[3] / "models" / "en_ewt" / "segmenter.pt")
    text = "Hi there.\nBye now."
    decided = np.zeros(len(text), np.uint8)
    decided[[1, 8, 13]] = TOKEN_END
    decided[9] = SENTENCE_END  # on the line break, not on the full stop
    decided[-1] = SENTENCE_END
    monkeypatch.setattr(stored.model, "decide", lambda scores: torch.from_numpy(decided))
    gold = np.zeros(len(text), np.uint8)
    found = sentence_training._system(stored, LabelledText(text, gold)).classes
    assert (found[8], found[9]) == (SENTENCE_END, NONE)
