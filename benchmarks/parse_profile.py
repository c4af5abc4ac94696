"""Where a parse spends its time: wall-clock timers around the parts of ``inference.parse``.

Usage: ``python benchmarks/parse_profile.py CHECKPOINT [--input FILE] [--threads 2]
[--rounds 2]`` (default input: $UD_ROOT/UD_English-EWT/en_ewt-ud-test.conllu), or
``python benchmarks/parse_profile.py --onnx FOLDER ...`` for an export in ``runtime=onnx``.

Wraps the encoder, the scorers, the label choice and the decoder or the search's steps with
timers, parses the input ``rounds`` times and prints the fastest round: sentences/s, the share
outside the encoder and each part's seconds and share (nested parts overlap: the label scores
are inside the label choice, the search's steps inside the search). A timer costs about a
microsecond a call; the search's steps are called a few hundred times per parse.

With ``--onnx`` the timers go around each graph's runs, the search, the decoder and the label
choice of :class:`biaffine.onnxrun.OnnxParser` (torch is not imported), after one parse that
fills the character model's table of forms; the encoder's seconds are then those of
``scores.onnx`` times the share of its kernel time that onnxruntime's profiler gives the nodes
under ``/encoder/``, over one more parse.

For an A/B comparison run it twice in alternation, once with ``PYTHONPATH`` set to another
checkout: the parts it does not find there are left out.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biaffine.data.conllu import Sentence, read_conllu
from biaffine.runtime import cpu_description

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"


class Timers:
    """Seconds and calls per label, of the functions :meth:`wrap` replaced."""

    def __init__(self) -> None:
        """No time yet."""
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()

    def wrap(self, label: str, owner: Any, name: str) -> None:
        """Replace ``owner.name`` (when both exist) by a timed call of it."""
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


def instrument(model: Any) -> Timers:
    """Timers around the parts of a parse by ``model``'s family."""
    import transitions
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
    # The greedy search's one compiled loop (scores, legality, positions, transitions).
    slot_scorer = getattr(transitions, "SlotScorer", None)  # absent from older checkouts
    timers.wrap("search: compiled greedy loop", slot_scorer, "greedy")
    timers.wrap("deprojectivization", transition, "deprojectivize_batch")
    return timers


def main() -> None:
    """Parse the arguments, time, print a markdown report."""
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, nargs="?")
    parser.add_argument("--onnx", type=Path, default=None, help="an export folder instead")
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if (args.checkpoint is None) == (args.onnx is None):
        parser.error("give a CHECKPOINT or --onnx FOLDER")
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    sentences = list(read_conllu(source))
    if args.onnx:
        name, (total, seconds, calls) = _onnx_rounds(args.onnx, sentences, args)
    else:
        name, (total, seconds, calls) = _torch_rounds(args.checkpoint, sentences, args)
    outside = total - seconds["encoder"]
    print(name)
    print(f"CPU: {cpu_description()}, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    print(f"{len(sentences)} sentences in {total:.2f} s: {len(sentences) / total:.0f} sentences/s")
    print(f"outside the encoder {outside:.2f} s ({100 * outside / total:.0f}%)\n")
    print("| part | seconds | share | calls |\n|---|---:|---:|---:|")
    for label, spent in sorted(seconds.items(), key=lambda item: -item[1]):
        print(f"| {label} | {spent:.3f} | {100 * spent / total:.1f}% | {calls[label]} |")


Round = tuple[float, dict[str, float], dict[str, int]]


def _torch_rounds(
    path: Path, sentences: list[Sentence], args: argparse.Namespace
) -> tuple[str, Round]:
    """The fastest of ``args.rounds`` parses by the checkpoint at ``path``, with its timers."""
    import torch

    from biaffine import checkpoint
    from biaffine.inference import parse, warm_up
    from biaffine.inference.settings import DEFAULT_DECODER

    torch.set_num_threads(args.threads)
    saved = checkpoint.load(path)
    model = checkpoint.build_model(saved)
    warm_up(model, {"": DEFAULT_DECODER})
    timers = instrument(model)
    best = _fastest(timers, lambda: parse(model, saved.vocabs, sentences), args.rounds)
    return f"{path} ({saved.parser} {saved.model_config.get('system', '')})", best


def _onnx_rounds(
    folder: Path, sentences: list[Sentence], args: argparse.Namespace
) -> tuple[str, Round]:
    """The fastest of ``args.rounds`` parses by the export in ``folder``, with its timers."""
    from biaffine import onnxrun

    parser = onnxrun.OnnxParser.load(folder, threads=args.threads)
    parser.parse(sentences)  # the character model's table filled, kernels loaded
    timers = Timers()
    for name, session in parser.sessions.items():
        timers.wrap(f"{name}.onnx", session, "run")
    searcher = parser.searcher
    if searcher is not None:
        import transitions

        timers.wrap("search", type(searcher), "heads")
        slot_scorer = getattr(transitions, "SlotScorer", None)  # absent from older checkouts
        timers.wrap("search: compiled greedy loop", slot_scorer, "greedy")
    timers.wrap("tree decoder", onnxrun, "decode_arc_scores")
    timers.wrap("label choice", onnxrun, "word_label_ids")
    timers.wrap("deprojectivization", onnxrun, "deprojectivize_batch")
    timers.wrap("predicted columns", onnxrun, "predicted_columns")
    total, seconds, calls = _fastest(timers, lambda: parser.parse(sentences), args.rounds)
    share = _encoder_share(folder, parser, sentences, args.threads)
    seconds["encoder"] = share * seconds["scores.onnx"]
    calls["encoder"] = calls["scores.onnx"]
    family = parser.searcher.system.name if parser.searcher else "graph"
    name = f"{folder} (runtime=onnx, {family}; encoder {100 * share:.0f}% of scores.onnx)"
    return name, (total, seconds, calls)


def _encoder_share(folder: Path, parser: Any, sentences: list[Sentence], threads: int) -> float:
    """The share of ``scores.onnx``'s kernel time in nodes under ``/encoder/``, one parse."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    # The profiler writes its trace to a file; it goes in a folder of its own, not the caller's.
    with tempfile.TemporaryDirectory() as folder_for_trace:
        options.profile_file_prefix = str(Path(folder_for_trace) / "scores")
        session = onnxruntime.InferenceSession(str(folder / "scores.onnx"), options)
        parser.sessions["scores"] = session
        parser.parse(sentences)
        trace = json.loads(Path(session.end_profiling()).read_text())
    nodes = [e for e in trace if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    encoder = sum(e["dur"] for e in nodes if e["name"].startswith("/encoder/"))
    return encoder / sum(e["dur"] for e in nodes)


def _fastest(timers: Timers, run: Callable[[], object], rounds: int) -> Round:
    best: Round | None = None
    for _ in range(rounds):
        timers.seconds.clear()
        timers.calls.clear()
        started = time.perf_counter()
        run()
        total = time.perf_counter() - started
        if best is None or total < best[0]:
            best = (total, dict(timers.seconds), dict(timers.calls))
    assert best is not None
    return best


if __name__ == "__main__":
    main()
