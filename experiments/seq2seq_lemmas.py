r"""A character seq2seq lemmatizer on the words whose form training lacks, against a model's lemmas.

The shipped lemmatizer classifies each word into an edit script; on Turkish and Hungarian it
picks the wrong cut for many unseen inflected forms (docs/lemmas.md). Stanza lemmatizes such
words with a sequence-to-sequence model over characters. This experiment trains one (a BiLSTM
over the form's characters with its UPOS as a first symbol; an LSTM decoder with bilinear
attention, greedy decoding) on the training file's distinct (form, UPOS, lemma) triples, for a
fixed number of minutes, keeps the weights of the epoch that lemmatizes most dev words
whose form training lacks right (its dev curve moves by several points from epoch to epoch),
and scores it on the dev words whose form training lacks, given the
UPOS a model predicted, against that model's own lemmas (a ``predict.py columns=all
overwrite_columns=true`` output of the dev file) and a few ways of combining the two; with
``--test``, the same trained model on the test words too.

Usage::

    PYTHONPATH=. python experiments/seq2seq_lemmas.py --train TRAIN.conllu --dev DEV.conllu \
        --system MODEL_DEV.conllu [--test TEST.conllu --test-system MODEL_TEST.conllu] \
        [--minutes 15] [--threads 1] [--seed 1]
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from biaffine.data.conllu import read_conllu

PAD, BOS, EOS, UNKNOWN = 0, 1, 2, 3
BATCH = 64
LR, LATE_LR, LATE_SHARE = 2e-3, 5e-4, 0.6  # the lower rate for the last 40% of the minutes


@dataclass(frozen=True)
class Word:
    """One word of a CoNLL-U file."""

    form: str
    upos: str
    lemma: str


def words(path: str) -> list[Word]:
    """Every word of a CoNLL-U file, in order."""
    return [
        Word(f, u, lemma)
        for s in read_conllu(path)
        for f, u, lemma in zip(s.forms, s.upos, s.lemmas, strict=True)
    ]


class Symbols:
    """Integer ids of characters and UPOS tags; ids 0-3 are padding, start, end, unknown."""

    def __init__(self, train: Sequence[Word]) -> None:
        """Take the characters of the training forms and lemmas and their UPOS tags."""
        chars = sorted({c for w in train for c in w.form + w.lemma})
        tags = sorted({w.upos for w in train})
        self.char_id = {c: 4 + k for k, c in enumerate(chars)}
        self.tag_id = {t: 4 + len(chars) + k for k, t in enumerate(tags)}
        self.size = 4 + len(chars) + len(tags)
        self.char = {k: c for c, k in self.char_id.items()}

    def source(self, form: str, upos: str) -> list[int]:
        """The encoder's input: the UPOS, then the form's characters."""
        return [self.tag_id.get(upos, UNKNOWN)] + [self.char_id.get(c, UNKNOWN) for c in form]

    def target(self, lemma: str) -> list[int]:
        """The decoder's output: the lemma's characters, then the end."""
        return [self.char_id.get(c, UNKNOWN) for c in lemma] + [EOS]

    def text(self, ids: Sequence[int]) -> str:
        """The characters of ``ids`` up to the first end."""
        out = []
        for k in ids:
            if k == EOS:
                break
            out.append(self.char.get(k, ""))
        return "".join(out)


class Seq2Seq(nn.Module):
    """BiLSTM encoder, LSTM decoder with bilinear attention over the encoder's states."""

    def __init__(self, n_symbols: int, dim: int = 64, hidden: int = 128) -> None:
        """Symbol embeddings of ``dim``, ``hidden`` units per encoder direction."""
        super().__init__()
        self.embed = nn.Embedding(n_symbols, dim, padding_idx=PAD)
        self.encoder = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, 2 * hidden)
        self.decoder = nn.LSTMCell(dim + 2 * hidden, 2 * hidden)
        self.attend = nn.Linear(2 * hidden, 2 * hidden, bias=False)
        self.out = nn.Linear(4 * hidden, n_symbols)
        self.dropout = nn.Dropout(0.3)

    def encode(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, tuple]:
        """Encoder states float[B, S, 2H], mask bool[B, S], the decoder's first state."""
        mask = source != PAD
        states, _ = self.encoder(self.dropout(self.embed(source)))
        mean = states.sum(1) / mask.sum(1, keepdim=True)
        first = torch.tanh(self.bridge(mean))
        return states, mask, (first, torch.zeros_like(first))

    def step(self, previous: torch.Tensor, context: torch.Tensor, state: tuple, states, mask):
        """One decoder step: scores float[B, V], the new attention context and state."""
        inputs = torch.cat([self.dropout(self.embed(previous)), context], 1)
        h, c = self.decoder(inputs, state)
        weights = torch.einsum("bsh,bh->bs", states, self.attend(h)).masked_fill(~mask, -1e9)
        context = torch.einsum("bs,bsh->bh", weights.softmax(1), states)
        return self.out(self.dropout(torch.cat([h, context], 1))), context, (h, c)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Teacher-forced scores float[B, T, V] for target int[B, T]."""
        states, mask, state = self.encode(source)
        context = states.new_zeros(len(source), states.shape[2])
        previous = torch.full((len(source),), BOS)
        scores = []
        for t in range(target.shape[1]):
            out, context, state = self.step(previous, context, state, states, mask)
            scores.append(out)
            previous = target[:, t]
        return torch.stack(scores, 1)

    @torch.no_grad()
    def greedy(self, source: torch.Tensor, limit: int) -> torch.Tensor:
        """The most likely symbol at each step, int[B, <= limit]."""
        states, mask, state = self.encode(source)
        context = states.new_zeros(len(source), states.shape[2])
        previous = torch.full((len(source),), BOS)
        outs, ended = [], torch.zeros(len(source), dtype=torch.bool)
        for _ in range(limit):
            out, context, state = self.step(previous, context, state, states, mask)
            previous = out.argmax(1)
            outs.append(previous)
            ended |= previous == EOS
            if ended.all():
                break
        return torch.stack(outs, 1)


def padded(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    """int[len(rows), longest] with PAD after each row."""
    longest = max(map(len, rows))
    return torch.tensor([list(row) + [PAD] * (longest - len(row)) for row in rows])


def batches(triples: list[Word], rng: random.Random) -> Iterator[list[Word]]:
    """Batches of forms of like length, in random order."""
    keyed = sorted(triples, key=lambda w: len(w.form) // 3 + rng.random())
    chunks = [keyed[i : i + BATCH] for i in range(0, len(keyed), BATCH)]
    rng.shuffle(chunks)
    yield from chunks


def lemmatize(model: Seq2Seq, symbols: Symbols, items: Sequence[tuple[str, str]]) -> list[str]:
    """The model's lemma of each (form, UPOS)."""
    model.eval()
    guesses = []
    for i in range(0, len(items), 256):
        chunk = items[i : i + 256]
        source = padded([symbols.source(form, upos) for form, upos in chunk])
        for row in model.greedy(source, limit=2 * source.shape[1] + 8).tolist():
            guesses.append(symbols.text(row))
    model.train()
    return guesses


def train(
    model: Seq2Seq,
    symbols: Symbols,
    triples: list[Word],
    minutes: float,
    seed: int,
    report: Callable[[int, float], None],
) -> None:
    """Adam on the cross-entropy of the lemma's characters, epochs until ``minutes`` pass."""
    rng = random.Random(seed)
    optimizer = torch.optim.Adam(model.parameters(), LR)
    loss_of = nn.CrossEntropyLoss(ignore_index=PAD)
    start, epoch = time.monotonic(), 0
    while time.monotonic() - start < minutes * 60:
        if time.monotonic() - start > LATE_SHARE * minutes * 60:
            for group in optimizer.param_groups:
                group["lr"] = LATE_LR
        epoch += 1
        for batch in batches(triples, rng):
            source = padded([symbols.source(w.form, w.upos) for w in batch])
            target = padded([symbols.target(w.lemma) for w in batch])
            loss = loss_of(model(source, target).flatten(0, 1), target.flatten())
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
        report(epoch, (time.monotonic() - start) / 60)


Rule = Callable[[str, str, set[str]], str]

RULES: dict[str, Rule] = {
    "the model's lemma": lambda model, s2s, lemmas: model,
    "seq2seq's, every unseen form": lambda model, s2s, lemmas: s2s,
    "seq2seq's where the model's is no training lemma": (
        lambda model, s2s, lemmas: s2s if model not in lemmas else model
    ),
    "seq2seq's where it is a training lemma and the model's is not": (
        lambda model, s2s, lemmas: s2s if s2s in lemmas and model not in lemmas else model
    ),
    "seq2seq's unless the model's is a training lemma and it is not": (
        lambda model, s2s, lemmas: model if model in lemmas and s2s not in lemmas else s2s
    ),
}


@dataclass(frozen=True)
class Scored:
    """A gold file's words, a model's output for them and which of them training lacks."""

    gold: list[Word]
    system: list[Word]
    unseen: list[int]

    @classmethod
    def read(cls, gold: str, system: str, seen: set[str]) -> Scored:
        """Read both files; exit with a line naming ``system`` if its words differ."""
        gold_words, system_words = words(gold), words(system)
        if [w.form for w in gold_words] != [w.form for w in system_words]:
            raise SystemExit(f"{system}: its words are not those of {gold}")
        unseen = [k for k, w in enumerate(gold_words) if w.form not in seen]
        return cls(gold_words, system_words, unseen)

    def items(self) -> list[tuple[str, str]]:
        """(form, the model's UPOS) of each unseen word: the seq2seq's inputs."""
        return [(self.gold[k].form, self.system[k].upos) for k in self.unseen]

    def scores(self, rule: Rule, guesses: Sequence[str], lemmas: set[str]) -> tuple[float, float]:
        """Percent right of the unseen words and of all words, with ``rule`` on the unseen."""
        right = {k for k, w in enumerate(self.gold) if self.system[k].lemma == w.lemma}
        for guess, k in zip(guesses, self.unseen, strict=True):
            right.discard(k)
            if rule(self.system[k].lemma, guess, lemmas) == self.gold[k].lemma:
                right.add(k)
        unseen_right = len(right.intersection(self.unseen))
        return 100 * unseen_right / len(self.unseen), 100 * len(right) / len(self.gold)


def main(argv: Sequence[str] | None = None) -> None:
    """Train for the minutes given, reporting the dev score each epoch; then each rule's."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--train", required=True)
    options.add_argument("--dev", required=True)
    options.add_argument("--system", required=True, help="the model's output for --dev")
    options.add_argument("--test", default=None)
    options.add_argument("--test-system", default=None, help="the model's output for --test")
    options.add_argument("--minutes", type=float, default=15.0)
    options.add_argument("--threads", type=int, default=1)
    options.add_argument("--seed", type=int, default=1)
    args = options.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_words = words(args.train)
    seen = {w.form for w in train_words}
    sets = {"dev": Scored.read(args.dev, args.system, seen)}
    if args.test is not None:
        sets["test"] = Scored.read(args.test, args.test_system, seen)
    triples = sorted(set(train_words), key=lambda w: (w.form, w.upos, w.lemma))
    symbols = Symbols(triples)
    model = Seq2Seq(symbols.size)
    dev = sets["dev"]
    sizes = f"{len(dev.gold):,} dev words, {len(dev.unseen):,} unseen"
    print(f"{len(triples):,} training triples; {sizes}")

    best: dict[str, Any] = {"unseen": -1.0}

    def report(epoch: int, minutes: float) -> None:
        guesses = lemmatize(model, symbols, dev.items())
        unseen, _ = dev.scores(RULES["seq2seq's, every unseen form"], guesses, set())
        print(f"epoch {epoch}, {minutes:.1f} min: dev unseen right {unseen:.2f}%", flush=True)
        if unseen > best["unseen"]:
            best.update(unseen=unseen, epoch=epoch, weights=copy.deepcopy(model.state_dict()))

    train(model, symbols, triples, args.minutes, args.seed, report)
    model.load_state_dict(best["weights"])
    print(f"\nthe weights of epoch {best['epoch']}")
    lemmas = {w.lemma for w in train_words}
    guesses = {name: lemmatize(model, symbols, scored.items()) for name, scored in sets.items()}
    columns = [f"{n} unseen right | {n} Lemmas (accuracy)" for n in sets]
    print("\n| rule | " + " | ".join(columns) + " |")
    print("|---|" + "--:|--:|" * len(sets))
    for name, rule in RULES.items():
        cells = [
            f"{unseen:.2f}% | {total:.2f}"
            for n, scored in sets.items()
            for unseen, total in [scored.scores(rule, guesses[n], lemmas)]
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
