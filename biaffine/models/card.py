"""Model cards: where a shipped model's facts come from, and its page in ``docs/models.md``.

A card (``models/NAME/card.json``) is plain JSON, written by :mod:`biaffine.models.build`:

- ``name``, ``language``, ``treebank`` (folder, source repository and commit, the newest UD
  release its README's changelog names, licence, and whether the licence forbids commercial
  use), ``files`` (``parser``, ``segmenter``),
  ``size_bytes``, ``weights`` (how they are stored), ``requires`` (what to install beyond the
  base install, e.g. ``rootparse[transformer]`` for a model with MiniLM features);
- ``training``: per component the recipe, the command as it ran, wall minutes and epochs, and
  the machine;
- ``evaluation`` and ``scores``: the test file, threads, and the F1 of every metric from gold
  tokenization and from raw text (:mod:`biaffine.models.scoring`); ``float32_scores`` (where
  measured with today's decoding): the same model before its weights were halved, gold
  tokenization;
- ``speed`` (with the CPU and its load), ``limits`` (known weaknesses, in words),
  ``package_version``.

The facts about the data and the runs are read here from the treebank folder (its README's
``License:`` line, ``MANIFEST.tsv`` beside it) and the training run folders (Hydra's
``.hydra/overrides.yaml``, the log's time stamps).
"""

from __future__ import annotations

import csv
import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from biaffine.data.lexicon import CHARACTER_MODELS
from biaffine.models.scoring import GOLD, RAW

__all__ = [
    "averaged_facts",
    "ensemble_facts",
    "render_page",
    "resumed_command",
    "run_facts",
    "score",
    "treebank_facts",
    "write_json",
]

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+\]")
_LICENCE = re.compile(r"^License:\s*(.+?)\s*$", re.MULTILINE)
_RELEASE = re.compile(r"\bv2\.(\d+)\b")
_NON_COMMERCIAL = re.compile(r"(?<![A-Z])NC(?![A-Z])")  # the NC of CC BY-NC-SA
LEG_START = "[biaffine.training.compose][INFO] - train: "
"""What the trainer logs first on each start (the training set's size): a run's legs begin there."""
RESUMED = "[biaffine.training.compose][INFO] - resumed after epoch "
"""What the trainer logs on resuming a run (``trainer.resume=true``)."""


def treebank_facts(folder: Path) -> dict[str, Any]:
    """The treebank's name, language, licence and source commit, from its own files.

    Raises:
        ValueError: the README names no licence.
    """
    readme = next(iter(sorted(folder.glob("README*"))), None)
    found = _LICENCE.search(readme.read_text(encoding="utf-8")) if readme else None
    if found is None:
        raise ValueError(f"{folder}: no 'License:' line in its README")
    licence = found.group(1)
    facts = {
        "name": folder.name,
        "licence": licence,
        "non_commercial": _NON_COMMERCIAL.search(licence) is not None,
    }
    releases = [int(minor) for minor in _RELEASE.findall(readme.read_text(encoding="utf-8"))]
    if releases:  # the newest release its changelog names: the data is that release or later
        facts["ud_release"] = f"2.{max(releases)}"
    return facts | _source(folder)


def _source(folder: Path) -> dict[str, str]:
    """The repository and commit ``MANIFEST.tsv`` (beside the treebanks) records, if any."""
    manifest = folder.parent / "MANIFEST.tsv"
    if not manifest.is_file():
        return {}
    with manifest.open(encoding="utf-8", newline="") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            if row["folder"] == folder.name:
                return {"source": row["repo"], "commit": row["commit"]}
    return {}


_NOT_TRAINING = ("hydra.", "trainer.progress_bar=")
"""Overrides that change where a run writes or what it shows, not what it trains."""


def run_facts(run: Path, script: str) -> dict[str, Any]:
    """The command a Hydra run ran, its wall minutes and how often it was resumed (if it was).

    Args:
        run: the run folder (``.hydra/overrides.yaml`` and a ``*.log`` inside).
        script: the entry point, e.g. ``train.py``.
    """
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text(encoding="utf-8"))
    kept = [o for o in overrides if not o.startswith(_NOT_TRAINING)]
    facts: dict[str, Any] = {"command": " ".join(["python", script, *kept])}
    log = next(iter(sorted(run.glob("*.log"))), None)
    if log is not None:
        text = log.read_text(encoding="utf-8")
        facts["minutes"] = _minutes(text.splitlines())
        if RESUMED in text:
            facts["resumes"] = text.count(RESUMED)
    return facts


def averaged_facts(branches: Sequence[Path], averaged: str | Path) -> dict[str, Any]:
    """The facts of a parser averaged from branches of one run (:mod:`biaffine.training.average`).

    Each branch is a Hydra run started from the same run's ``last.pt`` (``trainer.init_from``);
    the branches ran side by side, so the minutes are the trunk's plus the longest branch's.

    Args:
        branches: each branch's checkpoint, in its run folder.
        averaged: the averaged checkpoint (named in the averaging command).

    Returns:
        ``command`` (the trunk's), ``minutes``, ``epochs`` (the trunk's), ``branches`` (each
        one's ``command``, with the trunk's folder written ``TRUNK``, ``minutes`` and best
        ``epochs``) and ``average`` (the command).

    Raises:
        ValueError: a branch started from no run, or branches started from different runs.
    """
    runs = [path.parent for path in branches]
    starts = {_init_from(run) for run in runs}
    if None in starts or len(starts) != 1:
        raise ValueError(
            f"{', '.join(map(str, runs))}: not branches of one run (trainer.init_from)"
        )
    trunk = next(iter(starts)).parent
    facts = [run_facts(run, "train.py") for run in runs]
    for fact, run in zip(facts, runs, strict=True):
        fact["command"] = fact["command"].replace(str(trunk), "TRUNK")
        fact["epochs"] = _epochs(run)[1]
    names = [f"BRANCH_{i}/{path.name}" for i, path in enumerate(branches, 1)]
    found = run_facts(trunk, "train.py")
    return {
        "command": found["command"],
        "minutes": round(found["minutes"] + max(fact["minutes"] for fact in facts), 1),
        "epochs": _epochs(trunk)[0],
        "branches": facts,
        "average": " ".join(["python -m biaffine.training.average", Path(averaged).name, *names]),
    }


def ensemble_facts(
    members: Sequence[Mapping[str, Any]],
    stored_as: str,
    recipes: Sequence[str],
    commands: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The facts of an ensemble of parsers (:mod:`biaffine.training.ensemble`).

    Each member's come from its Hydra run folder, or from the card of the shipped model whose
    parser it is (``models/NAME/parser.pt``: its run folder may be gone). The members can train
    side by side, one core each, so the minutes are the longest member's.

    Args:
        members: the ensemble checkpoint's ``ensemble_of`` (each member's ``path`` and
            ``metadata``).
        stored_as: the storage of the shipped weights (named in the joining command).
        recipes: one per member, the recipe of a member trained in a run folder (the model's
            own, say ``python train.py experiment=en_ewt``, or that with the overrides its run
            had); a shipped model's parser keeps its card's.
        commands: one per member, or None where no member's run was resumed: the one command
            the legs of a member's resumed run amount to (:func:`resumed_command`), empty for
            a member whose run was never resumed.

    Returns:
        ``recipe`` and ``command`` (the joining command, members written ``MEMBER_i``),
        ``minutes``, ``epochs`` (the members' best epochs), and ``members``: each one's
        ``recipe``, ``command``, ``minutes`` and best ``epochs``.

    Raises:
        ValueError: a member that is neither in a run folder nor a shipped model's parser; not
            one recipe (or command) per member; a resumed member without its command, or a
            command for a member never resumed.
    """
    commands = [""] * len(members) if commands is None else commands
    for count, what in ((len(recipes), "recipes"), (len(commands), "commands")):
        if count != len(members):
            raise ValueError(f"{count} {what} for an ensemble of {len(members)} parsers")
    facts = [
        _member_facts(Path(m["path"]), m["metadata"], recipe, command)
        for m, recipe, command in zip(members, recipes, commands, strict=True)
    ]
    names = [f"MEMBER_{i}/best.pt" for i in range(1, len(facts) + 1)]
    command = " ".join(
        ["python -m biaffine.training.ensemble parser.pt", *names, f"--stored-as {stored_as}"]
    )
    return {
        "recipe": command,
        "command": command,
        "minutes": max(fact["minutes"] for fact in facts),
        "epochs": [fact["epochs"] for fact in facts],
        "members": facts,
    }


def _member_facts(
    path: Path, metadata: Mapping[str, Any], recipe: str, command: str
) -> dict[str, Any]:
    """An ensemble member's recipe, command, minutes and best epoch (see :func:`ensemble_facts`).

    ``command``: the one its resumed run's legs amount to, else empty.
    """
    if (path.parent / ".hydra").is_dir():
        found = run_facts(path.parent, "train.py")
        found = resumed_command(found, command, path.parent, "--member-command")
        epochs = metadata.get("progress", {}).get("best_epoch")
        return {"recipe": recipe, **found, "epochs": epochs}
    card = path.parent / "card.json"
    if card.is_file():
        if command:
            raise ValueError(f"--member-command: {path} is a shipped parser; its card's stands")
        run = json.loads(card.read_text(encoding="utf-8"))["training"]["parser"]
        kept = ("recipe", "command", "minutes", "epochs", "resumes")
        return {key: run[key] for key in kept if key in run}
    raise ValueError(f"{path}: neither in a training run folder nor a shipped model's parser")


def resumed_command(facts: dict[str, Any], command: str, run: Path, option: str) -> dict[str, Any]:
    """``facts`` of a parser ``run`` (:func:`run_facts`), its command ``command`` if it was resumed.

    Hydra keeps the overrides of a run folder's last start alone, so a run resumed
    (``trainer.resume=true``) does not record the command its legs amount to: the builder must
    be told it (by ``option``), and is refused one for a run that was never resumed.

    Raises:
        ValueError: a resumed run without ``command``, or ``command`` for a run never resumed.
    """
    times = facts.get("resumes", 0)
    if times and not command:
        raise ValueError(
            f"{run} was resumed {times} time(s) and its overrides are its last start's: give "
            f"{option}, the single command its legs amount to"
        )
    if command and not times:
        raise ValueError(f"{option}: {run} was never resumed; its overrides are its command")
    return facts | ({"command": command} if times else {})


def _init_from(run: Path) -> Path | None:
    """The checkpoint a Hydra run started from (its ``trainer.init_from`` override), or None."""
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text(encoding="utf-8"))
    found = [o.split("=", 1)[1] for o in overrides if o.startswith("trainer.init_from=")]
    return Path(found[0]) if found else None


def _epochs(run: Path) -> tuple[int, int]:
    """(the last epoch, the best epoch) of a parser run, from its ``metrics.jsonl``."""
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    epochs = [e for e in map(json.loads, lines) if e.get("event") == "epoch"]
    return epochs[-1]["epoch"], epochs[-1]["best_epoch"]


def _minutes(lines: Iterable[str]) -> float:
    """Minutes a run's log spans: first to last time-stamped line of each of its legs, summed.

    A run resumed (``trainer.resume=true``) appends a leg to the same log; the time between
    legs, when nothing ran, is not counted. A leg begins where the trainer logs the training
    set (:data:`LEG_START`), which it does first on every start.
    """
    legs: list[list[datetime.datetime]] = []
    for line in lines:
        found = _STAMP.match(line)
        if found is None:
            continue
        if not legs or LEG_START in line:
            legs.append([])
        legs[-1].append(datetime.datetime.fromisoformat(found.group(1)))
    seconds = sum((leg[-1] - leg[0]).total_seconds() for leg in legs)
    return round(seconds / 60, 1)


_METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")
_METRICS += ("UAS", "LAS", "CLAS", "MLAS", "BLEX")


def render_page(cards: Iterable[Mapping[str, Any]]) -> str:
    """``docs/models.md``: a summary table, then one section per card."""
    cards = list(cards)
    lines = [
        "# Shipped models",
        "",
        "Written by `python -m biaffine.models.build` from each `models/NAME/card.json`; "
        "`tests/models` checks that every figure below is what the model scores today.",
        "Scores are CoNLL 2018 F1 on the treebank's UD test set, from raw text and from gold "
        "tokenization.",
        "",
        "| model | treebank | licence | size | LAS raw | LAS gold | UPOS gold | Lemmas gold |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [_summary_row(card) for card in cards]
    for card in cards:
        lines += ["", *_section(card)]
    return "\n".join(lines) + "\n"


def _summary_row(card: Mapping[str, Any]) -> str:
    scores, tree = card["scores"], card["treebank"]
    raw = scores.get(RAW, {}).get("LAS", "-")
    gold = scores[GOLD]
    licence = tree["licence"] + (" (non-commercial)" if tree["non_commercial"] else "")
    cells = [f"`{card['name']}`", tree["name"], licence, _megabytes(card["size_bytes"])]
    cells += [score(value) for value in (raw, gold["LAS"], gold.get("UPOS"), gold.get("Lemmas"))]
    return "| " + " | ".join(cells) + " |"


def score(value: Any) -> str:
    """A card's score as shown: two decimals (``90.80``, not ``90.8``), ``-`` where none."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.2f}"
    return "-" if value is None else str(value)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _member_lines(run: Mapping[str, Any]) -> list[str]:
    """The lines of an ensemble's members and joining."""
    lines = [
        f"  - `{m['recipe']}` ({m['minutes']} min, best epoch {m['epochs']}){_as_run(m)};"
        for m in run["members"]
    ]
    return [*lines, f"  - joined: `{run['command']}`."]


def _branch_lines(run: Mapping[str, Any]) -> list[str]:
    """The lines of an averaged parser's branches and averaging (none for a single run)."""
    if "branches" not in run:
        return []
    lines = [
        f"  - then, side by side from its `last.pt`: `{b['command']}` ({b['minutes']} min, best "
        f"epoch {b['epochs']});"
        for b in run["branches"]
    ]
    return [
        *lines,
        f"  - their weights averaged: `{run['average']}` ({run['minutes']} min in all).",
    ]


def _run_line(part: str, run: Mapping[str, Any]) -> str:
    """A parser's or segmenter's line: its recipe, minutes, epochs and command as run."""
    minutes = "" if "branches" in run else f"{run['minutes']} min, "
    return (
        f"- {part.capitalize()}: `{run['recipe']}` ({minutes}{run['epochs']} epochs)"
        f"{_as_run(run)}{':' if minutes == '' else '.'}"
    )


def _as_run(run: Mapping[str, Any]) -> str:
    """The command a run ran, where it is not its recipe, and its legs, where it was resumed."""
    as_run = "" if run["command"] == run["recipe"] else f"; as run: `{run['command']}`"
    if run.get("resumes"):
        as_run += f", in {run['resumes'] + 1} legs (trainer.resume=true)"
    return as_run


def _section(card: Mapping[str, Any]) -> list[str]:
    tree, training, speed = card["treebank"], card["training"], card["speed"]
    non_commercial = " — **non-commercial use only**" if tree["non_commercial"] else ""
    lines = [
        f"## `{card['name']}`: {card['language']}, {tree['name']}",
        "",
        f"- Data: {tree['name']} ({tree.get('source', '?')} at {tree.get('commit', '?')[:10]}, "
        f"UD {tree.get('ud_release', '?')} or later), licence {tree['licence']}{non_commercial}.",
        f"- Files: {', '.join(card['files'].values())}, {_megabytes(card['size_bytes'])} in all; "
        f"{card['weights']}.",
    ]
    for part in ("parser", "segmenter"):
        if part in training and "members" in training[part]:
            run = training[part]
            lines.append(
                f"- Parser: an ensemble of {len(run['members'])} parsers, each trained on one core "
                f"(the longest {run['minutes']} min), their probabilities averaged:"
            )
            lines += _member_lines(run)
            lines += _retag_lines(run)
            lines += _lexicon_model_lines(run)
        elif part in training:
            run = training[part]
            lines.append(_run_line(part, run))
            lines += _branch_lines(run)
            lines += _retag_lines(run)
            lines += _lexicon_model_lines(run)
            if "sentences" in run:
                lines.append(_sentence_line(run["sentences"]))
    if card["requires"]:
        needs = " ".join(f"'{r}'" for r in card["requires"])
        lines.append(f"- Needs beyond the base install: `pip install {needs}`.")
    if training.get("note"):
        lines.append(f"- {training['note']}")
    lines += [f"- Trained on: {training['machine']}.", "", *_score_table(card), ""]
    lines.append(
        f"Speed ({speed['threads']} threads, {speed['cpu']}, load {speed['load']}): "
        f"{speed['gold_sentences_per_second']} sentences/s from gold tokens (every column), "
        f"{speed['raw_sentences_per_second']} sentences/s from raw text."
    )
    lines += ["", "Known limits:", "", *(f"- {limit}" for limit in card["limits"])]
    return lines


def _retag_lines(run: Mapping[str, Any]) -> list[str]:
    """The line of a parser's taggers trained again on its frozen network, if they were.

    ``run["retag"]`` is the record :mod:`biaffine.training.retag` writes in the checkpoint's
    metadata (``retagged``).
    """
    if (retag := run.get("retag")) is None:
        return []
    best = " and ".join(f"{m['best_epoch']} of {m['epochs']}" for m in retag["members"])
    networks = "networks" if len(retag["members"]) > 1 else "network"
    return [
        f"  - then its taggers trained again on the frozen {networks}, reading the states the "
        f"tree computes: `{retag['command']}` ({retag['minutes']} min, "
        f"best epoch {best})."
    ]


def _lexicon_model_lines(run: Mapping[str, Any]) -> list[str]:
    """The lines of the character models trained into a parser's lexicon, under the parser's."""
    named = CHARACTER_MODELS.values()
    return [
        f"  - its lexicon's {name}: `{facts['recipe']}` ({facts['minutes']} min, best epoch "
        f"{facts['best_epoch']} of {facts['epochs']}, {facts['dev_right']}% of the "
        f"{facts['held_out']:,} dev words training lacks right{_weighed(facts)})."
        for key, name in named
        if (facts := run.get(key)) is not None
    ]


def _weighed(facts: Mapping[str, Any]) -> str:
    """What a guesser's run says of the weights it tried (``dev_upos``, ``dev_feats``), if any.

    A weight of None (``null``) is the guesser's pick alone.
    """
    for column in ("upos", "feats"):
        if f"dev_{column}" in facts:
            tried = ", ".join(
                f"{'alone' if weight is None else weight}: {right}"
                for weight, right in facts[f"dev_{column}"]
            )
            return f"; dev {column.upper()} by its weight beside the tagger: {tried}"
    return ""


def _sentence_line(run: Mapping[str, Any]) -> str:
    """The line of a segmenter's sentence model (``train_sentences.py``) under the segmenter's."""
    as_run = "" if run["command"] == run["recipe"] else f"; as run: `{run['command']}`"
    return (
        "  - its sentence model (sentence ends chosen again from a frozen transformer's reading "
        f"of the words): `{run['recipe']}` ({run['minutes']} min, "
        f"best epoch {run['epochs']}){as_run}."
    )


def _score_table(card: Mapping[str, Any]) -> list[str]:
    rows = [("from raw text", card["scores"].get(RAW)), ("gold tokenization", card["scores"][GOLD])]
    rows.append(("gold, float32 weights", card.get("float32_scores", {}).get(GOLD)))
    lines = ["| " + " | ".join(["input", *_METRICS]) + " |", "|---" + "|---:" * len(_METRICS) + "|"]
    for label, scores in rows:
        if scores:
            cells = [label, *(score(scores.get(metric)) for metric in _METRICS)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_json(card: Mapping[str, Any]) -> str:
    """The card as written to ``card.json``: indented, keys in the order given."""
    return json.dumps(card, indent=1, ensure_ascii=False) + "\n"
