r"""Train the lexicon's lemma generator for a model and write the model again with it.

The generator (:mod:`biaffine.data.lemma_generator`) writes the lemmas of the words whose form
training lacks, one character at a time. It is trained here after the parser, on the parser's
training file: its distinct (form, UPOS, lemma) triples, Adam at 2e-3 and then 5e-4 for the
last 40% of the minutes, batches of 64 forms of like length, dropout 0.3, gradients clipped at
norm 5. Its dev curve moves by several points from epoch to epoch (docs/lemmas.md), so after
each epoch it lemmatizes the dev words whose form training lacks (given their gold UPOS), and
the weights of the epoch with most of them right are kept. (A moving average of the weights,
decay 0.999 a step, was below the weights themselves in 55 of the 56 epochs of two 18-minute
Szeged runs, and never the best: it was not kept.)

Usage::

    python -m biaffine.training.lemma_generator CHECKPOINT TRAIN.conllu DEV.conllu OUT \
        [--minutes 18] [--threads 1] [--seed 1] [--stored-as float16|int8]

``OUT`` is ``CHECKPOINT`` with the generator in its lexicon, the facts of its training in its
metadata (``lemma_generator``: :meth:`Trained.facts`, with the options given), and
everything else as it was (weights, config; ``--stored-as`` stores the weights as a shipped
model's ``parser.pt`` does, and without it they are stored as in ``CHECKPOINT``: see
:func:`biaffine.checkpoint.rewrite`). The model must have a lexicon: the generator only writes
the lemmas of words the lexicon lacks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine import checkpoint, cli
from biaffine.cli import check_seed, check_threads, exit_on_termination, report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lemma_generator import BOS, PAD, SPECIAL_SYMBOLS, LemmaGenerator
from biaffine.data.lemmas import is_annotated
from biaffine.data.lexicon import CHARACTER_MODELS
from biaffine.files import check_file_output
from biaffine.inference.choices import missing_taggers

__all__ = [
    "Seq2Seq",
    "Trained",
    "add_generator",
    "add_to_lexicon",
    "adder",
    "fit",
    "held_out",
    "padded",
    "train_generator",
    "triples",
]

BATCH = 64
"""Forms per training batch."""

RATE, LATE_RATE, LATE_SHARE = 2e-3, 5e-4, 0.6
"""Adam's rate, and the lower one for the minutes after ``LATE_SHARE`` of them."""

DROPOUT = 0.3
CLIP = 5.0
DIM, HIDDEN = 64, 64
"""Symbol embeddings and encoder units per direction of the character models (docs/lemmas.md
and docs/tags.md measured these)."""

Triple = tuple[str, str, str]
"""(form, UPOS, lemma)."""


class Seq2Seq(nn.Module):
    """The generator's torch twin for training: same weights, teacher-forced scores."""

    def __init__(self, symbols: int, dim: int = DIM, hidden: int = HIDDEN) -> None:
        """``symbols`` symbol ids (specials, characters, tags), embeddings of ``dim``."""
        super().__init__()
        self.embed = nn.Embedding(symbols, dim, padding_idx=PAD)
        self.encoder = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, 2 * hidden)
        self.decoder = nn.LSTMCell(dim + 2 * hidden, 2 * hidden)
        self.attend = nn.Linear(2 * hidden, 2 * hidden, bias=False)
        self.out = nn.Linear(4 * hidden, symbols)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Scores float[B, T, V] of each target symbol given the ones before it.

        Args:
            source: int64[B, S] symbols read, PAD after each word's.
            target: int64[B, T] symbols to write, PAD after each lemma's end.
        """
        mask = source != PAD
        lengths = mask.sum(1)
        packed = pack_padded_sequence(
            self.dropout(self.embed(source)), lengths, batch_first=True, enforce_sorted=False
        )
        states, _ = pad_packed_sequence(
            self.encoder(packed)[0], batch_first=True, total_length=source.shape[1]
        )
        h = torch.tanh(self.bridge(states.sum(1) / lengths[:, None]))
        state = (h, torch.zeros_like(h))
        context = torch.zeros_like(h)
        keys = states @ self.attend.weight  # as the numpy generator computes attention
        previous = torch.full((len(source),), BOS)
        scores = []
        for t in range(target.shape[1]):
            inputs = torch.cat([self.dropout(self.embed(previous)), context], 1)
            state = self.decoder(inputs, state)
            weights = torch.einsum("bsh,bh->bs", keys, state[0]).masked_fill(~mask, -torch.inf)
            context = torch.einsum("bs,bsh->bh", weights.softmax(1), states)
            scores.append(self.out(self.dropout(torch.cat([state[0], context], 1))))
            previous = target[:, t]
        return torch.stack(scores, 1)


def triples(sentences: Sequence[Sentence]) -> list[Triple]:
    """The distinct (form, UPOS, lemma) of the words with a lemma, sorted."""
    found = {
        (form, upos, lemma)
        for sentence in sentences
        for form, upos, lemma in zip(sentence.forms, sentence.upos, sentence.lemmas, strict=True)
        if is_annotated(form, lemma)
    }
    return sorted(found)


def held_out(sentences: Sequence[Sentence], seen: set[str]) -> list[Triple]:
    """Every (form, UPOS, lemma) of a dev file whose form is not in ``seen``, in order."""
    return [
        (form, upos, lemma)
        for sentence in sentences
        for form, upos, lemma in zip(sentence.forms, sentence.upos, sentence.lemmas, strict=True)
        if form not in seen and is_annotated(form, lemma)
    ]


def generator_of(model: Seq2Seq, chars: Sequence[str], tags: Sequence[str]) -> LemmaGenerator:
    """The torch-free generator with ``model``'s weights (float32)."""
    arrays = {name: w.detach().float().numpy().copy() for name, w in model.state_dict().items()}
    dim, hidden = model.embed.embedding_dim, model.encoder.hidden_size
    return LemmaGenerator(tuple(chars), tuple(tags), dim, hidden, arrays)


def padded(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    """int64[len(rows), longest], PAD after each row."""
    longest = max(map(len, rows))
    return torch.tensor([[*row, *[PAD] * (longest - len(row))] for row in rows])


def _batches(data: Sequence[Triple], rng: random.Random) -> Iterator[Sequence[Triple]]:
    """Batches of forms of like length (a third of a character apart), in random order."""
    keyed = sorted(data, key=lambda t: len(t[0]) // 3 + rng.random())
    chunks = [keyed[i : i + BATCH] for i in range(0, len(keyed), BATCH)]
    rng.shuffle(chunks)
    yield from chunks


@dataclasses.dataclass(frozen=True)
class Trained:
    """A trained character model and the facts of its training.

    Attributes:
        model: the torch-free model with the weights of the best dev epoch.
        epochs: epochs run.
        best_epoch: the epoch kept.
        dev_right: percent of the held-out dev words it gets right (that epoch).
        held_out: how many dev words training lacks.
        minutes: training time.
    """

    model: Any
    epochs: int
    best_epoch: int
    dev_right: float
    held_out: int
    minutes: float

    def facts(self) -> dict[str, Any]:
        """Plain data: everything but the model."""
        return {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "model"
        }


Then = Callable[[Trained, checkpoint.Checkpoint, list[Sentence]], Trained]
"""What becomes of a trained character model, given the checkpoint it joins and the dev
sentences (:func:`add_to_lexicon`'s ``then``)."""


def fit(
    net: nn.Module,
    data: Sequence[Triple],
    loss_of: Callable[[Sequence[Triple]], torch.Tensor],
    judge: Callable[[], tuple[float, Any]],
    *,
    held: int,
    minutes: float,
    seed: int,
    max_epochs: int | None,
    report: Callable[[str], None],
) -> Trained:
    """Train ``net`` on ``data`` for ``minutes`` (or ``max_epochs``); keep the best dev epoch.

    Adam at :data:`RATE`, then :data:`LATE_RATE`; batches of like length (:func:`_batches`);
    gradients clipped at :data:`CLIP`. After each epoch ``judge()`` gives the percent of the
    held-out dev words right and the torch-free model to keep if it is the best so far.

    Args:
        net: the torch model, in train mode while it learns.
        data: the training triples.
        loss_of: the loss of a batch of triples.
        judge: the dev score and the torch-free model of the weights as they are.
        held: how many held-out dev words ``judge`` scores.
        minutes: the training budget.
        seed: the batches' order.
        max_epochs: a cap on the epochs, or None.
        report: writes a line after each epoch.
    """
    rng = random.Random(seed)
    optimizer = torch.optim.Adam(net.parameters(), RATE)
    best: dict[str, Any] = {"right": -1.0}
    start, epoch = time.monotonic(), 0
    while time.monotonic() - start < minutes * 60 and epoch != max_epochs:
        if time.monotonic() - start > LATE_SHARE * minutes * 60:
            for group in optimizer.param_groups:
                group["lr"] = LATE_RATE
        epoch += 1
        net.train()
        for batch in _batches(data, rng):
            loss = loss_of(batch)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), CLIP)
            optimizer.step()
        net.eval()
        right, model = judge()
        if right > best["right"]:
            best.update(right=right, epoch=epoch, model=model)
        elapsed = (time.monotonic() - start) / 60
        report(f"epoch {epoch}, {elapsed:.1f} min: dev words training lacks right {right:.2f}%")
    return Trained(
        best["model"],
        epochs=epoch,
        best_epoch=best["epoch"],
        dev_right=round(best["right"], 2),
        held_out=held,
        minutes=round((time.monotonic() - start) / 60, 1),
    )


def train_generator(
    train: Sequence[Sentence],
    dev: Sequence[Sentence],
    *,
    minutes: float,
    seed: int = 1,
    max_epochs: int | None = None,
    dim: int = DIM,
    hidden: int = HIDDEN,
    report: Callable[[str], None] = print,
) -> Trained:
    """Train on ``train``'s triples for ``minutes`` (or ``max_epochs``), keep the best dev epoch.

    Raises:
        ValueError: no training word with a lemma, or no dev word whose form training lacks.
    """
    data = triples(train)
    dev_words = held_out(dev, {form for sentence in train for form in sentence.forms})
    if not data or not dev_words:
        raise ValueError("the lemma generator needs training lemmas and unseen dev words")
    chars = sorted({c for form, _, lemma in data for c in form + lemma})
    tags = sorted({upos for _, upos, _ in data})
    torch.manual_seed(seed)
    model = Seq2Seq(SPECIAL_SYMBOLS + len(chars) + len(tags), dim, hidden)
    symbols = generator_of(model, chars, tags)  # its symbol tables
    loss = nn.CrossEntropyLoss(ignore_index=PAD)

    def loss_of(batch: Sequence[Triple]) -> torch.Tensor:
        source = padded([symbols.source(form, upos) for form, upos, _ in batch])
        target = padded([symbols.target(lemma) for _, _, lemma in batch])
        return loss(model(source, target).flatten(0, 1), target.flatten())

    def judge() -> tuple[float, LemmaGenerator]:
        generator = generator_of(model, chars, tags)
        return _percent_right(generator, dev_words), generator

    return fit(
        model,
        data,
        loss_of,
        judge,
        held=len(dev_words),
        minutes=minutes,
        seed=seed,
        max_epochs=max_epochs,
        report=report,
    )


def _percent_right(generator: LemmaGenerator, words: Sequence[Triple]) -> float:
    """Percent of ``words`` whose lemma ``generator`` writes right (given their UPOS)."""
    written = generator.lemmas([(form, upos) for form, upos, _ in words])
    right = sum(w == lemma for w, (_, _, lemma) in zip(written, words, strict=True))
    return 100 * right / len(words)


def add_to_lexicon(
    source: Path,
    out: Path,
    train: Path,
    dev: Path,
    kind: str,
    trainer: Callable[[list[Sentence], list[Sentence]], Trained],
    *,
    data_of: Callable[[Sequence[Sentence]], list[Triple]],
    options: dict[str, Any],
    stored_as: str | None = None,
    then: Then | None = None,
    needs: str | None = None,
) -> Trained:
    """Write ``source`` to ``out`` with a character model trained on ``train`` in its lexicon.

    Args:
        source: the model's checkpoint.
        out: where to write it with the trained model.
        train: its training file.
        dev: its dev file.
        kind: the lexicon's field for the model (``generator``, ``feats_guesser``).
        trainer: trains it from the two files' sentences.
        data_of: the (form, UPOS, value) triples the model learns from in some sentences.
        options: the options given, kept in the facts (metadata ``lemma_generator`` or
            ``feats_guesser``) with the run's.
        stored_as: how the weights are stored (:func:`biaffine.checkpoint.rewrite`).
        then: what becomes of the trained model before it is written, given the checkpoint
            as it was and the dev sentences (:func:`biaffine.training.upos_guesser.weigh`).
        needs: the column the model must have a tagger for (a guesser is weighed beside its
            tagger), checked before the minutes of training.

    Raises:
        ValueError: the checkpoint has no lexicon or lacks the tagger ``needs``, ``train``
            lacks forms its lexicon was built from, or the files give nothing to learn from.
    """
    loaded = checkpoint.load(source)
    lexicon = loaded.vocabs.lexicon
    if lexicon is None:
        raise ValueError(f"{source}: the model has no lexicon (train it again to get one)")
    if needs is not None:
        tagged = checkpoint.build_model(loaded).tagged_columns
        if needs not in tagged:
            raise ValueError(f"{source}: {missing_taggers([needs], tagged)}")
    train_sentences, dev_sentences = list(read_conllu(train)), list(read_conllu(dev))
    seen = {form for sentence in train_sentences for form in sentence.forms}
    # Another file trained a model for other words, judged unseen by that file, in silence.
    missing = lexicon.seen - seen
    if missing:
        raise ValueError(
            f"{train}: lacks {len(missing)} of the {len(lexicon.seen)} forms the model's lexicon "
            f"was built from (such as {min(missing)!r}): give the file the model was trained on"
        )
    if not any(form not in seen for form, _, _ in data_of(dev_sentences)):
        raise ValueError(f"{dev}: no word to learn from whose form {train} lacks")
    if not data_of(train_sentences):
        raise ValueError(f"{train}: no word to learn from")
    trained = trainer(train_sentences, dev_sentences)
    if then is not None:
        trained = then(trained, loaded, dev_sentences)
    vocabs = dataclasses.replace(
        loaded.vocabs, lexicon=dataclasses.replace(lexicon, **{kind: trained.model})
    )
    facts = {FACTS[kind]: {"options": {**options, "stored_as": stored_as}, **trained.facts()}}
    checkpoint.rewrite(loaded, out, vocabs=vocabs, metadata=facts, stored_as=stored_as)
    return trained


FACTS = {kind: key for kind, (key, _) in CHARACTER_MODELS.items()}
"""The metadata key of each kind of character model's training facts."""


def adder(
    kind: str,
    trainer: Callable[..., Trained],
    data_of: Callable[[Sequence[Sentence]], list[Triple]],
    *,
    then: Callable[..., Trained] | None = None,
    needs: str | None = None,
) -> Callable[..., Trained]:
    """The command's work for one kind of character model (:func:`add_to_lexicon`).

    Args:
        kind: the lexicon's field for the model.
        trainer: :func:`train_generator` or its like.
        data_of: the triples it learns from in some sentences.
        then: :func:`add_to_lexicon`'s, called with ``report=`` too.
        needs: :func:`add_to_lexicon`'s.

    Returns:
        ``add(source, train, dev, out, *, minutes, seed=1, max_epochs=None, dim, hidden,
        stored_as=None, report=print) -> Trained``: ``source`` written to ``out`` with a model
        trained on ``train`` (epoch chosen on ``dev``) in its lexicon.
    """

    def add(
        source: Path,
        train: Path,
        dev: Path,
        out: Path,
        *,
        minutes: float,
        seed: int = 1,
        max_epochs: int | None = None,
        dim: int = DIM,
        hidden: int = HIDDEN,
        stored_as: str | None = None,
        report: Callable[[str], None] = print,
    ) -> Trained:
        check_file_output(out, (source, train, dev))  # before the minutes of training
        _check_budget(minutes, max_epochs)
        _check_sizes(dim=dim, hidden=hidden, seed=seed)
        options = {"minutes": minutes, "seed": seed, "max_epochs": max_epochs}
        sizes = {"dim": dim, "hidden": hidden}
        return add_to_lexicon(
            source,
            out,
            train,
            dev,
            kind,
            lambda train_sentences, dev_sentences: trainer(
                train_sentences, dev_sentences, **options, **sizes, report=report
            ),
            data_of=data_of,
            options=options | sizes,
            stored_as=stored_as,
            then=None if then is None else functools.partial(then, report=report),
            needs=needs,
        )

    return add


def _check_sizes(*, dim: int, hidden: int, seed: int) -> None:
    """Refuse a network of no width and a seed torch cannot take, before any training.

    ``--dim 0`` and ``--seed 10**23`` were torch's messages from inside the training.
    """
    for name, value in (("--dim", dim), ("--hidden", hidden)):
        if value < 1:
            raise ValueError(f"{name} {value}: give a positive size")
    check_seed(seed)


def _check_budget(minutes: float, max_epochs: int | None) -> None:
    """Refuse a budget that trains no epoch (no best epoch to keep) or no cap at all."""
    if not minutes > 0:
        raise ValueError(f"--minutes {minutes}: give a positive number of minutes")
    if minutes == math.inf and max_epochs is None:  # trained on and on (epoch 564 after 60 s)
        raise ValueError("--minutes inf: give a finite number of minutes, or --max-epochs")
    if max_epochs is not None and max_epochs < 1:
        raise ValueError(f"--max-epochs {max_epochs}: give a positive number of epochs")


add_generator = adder("generator", train_generator, triples)
"""Write a checkpoint again with a lemma generator in its lexicon (:func:`adder`'s ``add``)."""


def command_line(
    argv: Sequence[str] | None,
    *,
    module: str,
    description: str,
    add: Callable[..., Trained],
    what: str,
    minutes: float,
    hidden: int,
) -> None:
    """Parse CHECKPOINT TRAIN DEV OUT and the options, run ``add``, say what it kept.

    Args:
        argv: the arguments (None: the process's).
        description: the command's help line.
        module: the command's module, as its usage names it (``python -m MODULE``).
        add: :func:`add_generator` or its like, called with the files and the options.
        what: the model's name in the closing line.
        minutes: the default ``--minutes``.
        hidden: the default ``--hidden``.
    """
    options = cli.ArgumentParser(prog=f"python -m {module}", description=description)
    options.add_argument("checkpoint", type=Path)
    options.add_argument("train", type=Path, help="the model's training file (CoNLL-U)")
    options.add_argument("dev", type=Path, help="its dev file: the epoch is chosen on it")
    options.add_argument("out", type=Path)
    options.add_argument("--minutes", type=float, default=minutes)
    options.add_argument("--max-epochs", type=int, default=None)
    options.add_argument("--threads", type=int, default=1)
    options.add_argument("--seed", type=int, default=1)
    options.add_argument("--dim", type=int, default=DIM, help="symbol embedding size")
    options.add_argument("--hidden", type=int, default=hidden, help="encoder units per direction")
    options.add_argument("--stored-as", choices=checkpoint.STORAGES, default=None)
    args = options.parse_args(argv)
    report_user_errors(lambda: check_threads(args.threads, "--threads"))
    torch.set_num_threads(args.threads)
    trained = report_user_errors(
        lambda: add(
            args.checkpoint,
            args.train,
            args.dev,
            args.out,
            minutes=args.minutes,
            seed=args.seed,
            max_epochs=args.max_epochs,
            dim=args.dim,
            hidden=args.hidden,
            stored_as=args.stored_as,
        )
    )
    print(
        f"{args.out}: {what} of epoch {trained.best_epoch} of {trained.epochs} "
        f"({trained.minutes} min), {trained.dev_right:.2f}% of the {trained.held_out:,} dev "
        "words training lacks right"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: CHECKPOINT TRAIN DEV OUT."""
    command_line(
        argv,
        module="biaffine.training.lemma_generator",
        description=__doc__.splitlines()[0],
        add=add_generator,
        what="lemma generator",
        minutes=18.0,
        hidden=HIDDEN,
    )


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
