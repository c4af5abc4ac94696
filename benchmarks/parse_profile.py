"""Where a parse spends its time: wall-clock timers around the parts of ``inference.parse``.

Usage: ``python benchmarks/parse_profile.py CHECKPOINT [--input FILE] [--threads 2]
[--rounds 2]`` (default input: $UD_ROOT/UD_English-EWT/en_ewt-ud-test.conllu).

Wraps the encoder, the scorers, the label choice and the decoder or the search's steps with
timers, parses the input ``rounds`` times and prints the fastest round: sentences/s, the share
outside the encoder and each part's seconds and share (nested parts overlap: the label scores
are inside the label choice, the search's steps inside the search). A timer costs about a
microsecond a call; the search's steps are called a few hundred times per parse.

For an A/B comparison run it twice in alternation, once with ``PYTHONPATH`` set to another
checkout: the parts it does not find there are left out.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from biaffine import checkpoint
from biaffine.data.conllu import read_conllu
from biaffine.inference import parse, warm_up
from biaffine.inference.settings import DEFAULT_DECODER
from biaffine.runtime import cpu_description

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"


class Timers:
    """Seconds and calls per label, of the functions :meth:`wrap` replaced."""

    def __init__(self) -> None:
        """No time yet."""
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()

    def wrap(self, label: str, owner: Any, name: str) -> None:
        """Replace ``owner.name`` (when it exists) by a timed call of it."""
        function: Callable[..., Any] | None = getattr(owner, name, None)
        if function is None:
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started
                self.calls[label] += 1

        setattr(owner, name, timed)


def instrument(model: torch.nn.Module) -> Timers:
    """Timers around the parts of a parse by ``model``'s family."""
    from biaffine.inference import graph, transition  # after parse: families registered
    from transitions import search
    from transitions.configs import Configs

    timers = Timers()
    timers.wrap("encoder", model.encoder, "forward")
    timers.wrap("label MLPs", model.labels, "forward")
    timers.wrap("label scores (at)", model.labels, "at")
    timers.wrap("label scores (at_words)", model.labels, "at_words")
    timers.wrap("label choice", graph, "choose_labels")
    transition.choose_labels = graph.choose_labels
    if model.family == "graph":
        timers.wrap("arc scorer", model.arcs, "forward")
        timers.wrap("tree decoder", graph, "decode_heads")
        return timers
    system = type(model.system)
    timers.wrap("slot projections and label MLPs", model, "encode_states")
    timers.wrap("search", transition, "search")
    timers.wrap("search: transition MLP", model, "score_slots")
    timers.wrap("search: log-softmax", search, "_legal_log_softmax")
    for name in ("observe", "advance", "legal", "apply", "terminal"):
        timers.wrap(f"search: {name}", system, name)
    timers.wrap("search: positions", Configs, "positions")
    timers.wrap("deprojectivization", transition, "deprojectivize_batch")
    return timers


def main() -> None:
    """Parse the arguments, time, print a markdown report."""
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    torch.set_num_threads(args.threads)
    saved = checkpoint.load(args.checkpoint)
    model = checkpoint.build_model(saved)
    sentences = list(read_conllu(source))
    warm_up(model, {"": DEFAULT_DECODER})
    timers = instrument(model)
    best: tuple[float, dict[str, float], dict[str, int]] | None = None
    for _ in range(args.rounds):
        timers.seconds.clear()
        timers.calls.clear()
        started = time.perf_counter()
        parse(model, saved.vocabs, sentences)
        total = time.perf_counter() - started
        if best is None or total < best[0]:
            best = (total, dict(timers.seconds), dict(timers.calls))
    assert best is not None
    total, seconds, calls = best
    outside = total - seconds["encoder"]
    print(f"{args.checkpoint} ({saved.parser} {saved.model_config.get('system', '')})")
    print(f"CPU: {cpu_description()}, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    print(f"{len(sentences)} sentences in {total:.2f} s: {len(sentences) / total:.0f} sentences/s")
    print(f"outside the encoder {outside:.2f} s ({100 * outside / total:.0f}%)\n")
    print("| part | seconds | share | calls |\n|---|---:|---:|---:|")
    for label, spent in sorted(seconds.items(), key=lambda item: -item[1]):
        print(f"| {label} | {spent:.3f} | {100 * spent / total:.1f}% | {calls[label]} |")


if __name__ == "__main__":
    main()
