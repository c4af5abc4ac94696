"""Train the peers' parsers that ``benchmarks/peers.py`` times, from UD English-EWT: no download.

Usage: ``UD_ROOT=... python -m benchmarks.peer_models FOLDER [--udpipe-iterations 2]
[--spacy-steps 400] [--only udpipe|spacy]`` (``pip install -e ".[bench]"``).

Writes into FOLDER (outside the repository):

- ``udpipe_en_ewt.udpipe``: a UDPipe 1 model (``ufal.udpipe.Trainer.train``) with no tokenizer,
  no tagger and a Parsito parser of UDPipe 1's default network (form 50, UPOS 20, FEATS 20,
  deprel 20 dimensions, a 200-unit hidden layer, projective system, dynamic oracle), trained on
  EWT train with its lemma, tag and feature columns blanked (:func:`blank_columns`): it parses
  from the word forms, as the project's parser and spaCy's do, and the UPOS and FEATS
  embeddings it keeps only ever see ``_`` (their cost is in every step, as in a released model);
- ``spacy_en_ewt/``: a spaCy 3.8 English pipeline with a ``parser`` alone
  (``spacy init config --pipeline parser --optimize efficiency``: its own CNN tok2vec,
  arc-eager), trained on ``spacy convert`` of EWT train (and dev for its scores) on the CPU;
- ``peers.json``: how each was trained (versions, options, steps, seconds).

Both train briefly (a few iterations or steps), so their accuracy is well below what they reach
at convergence; parsing speed does not depend on how long a network trained, only on its shape,
which is each tool's default. Each trains on one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biaffine.files import atomic_open

EWT = Path("UD_English-EWT")
SPLITS = {"train": "en_ewt-ud-train.conllu", "dev": "en_ewt-ud-dev.conllu"}
UDPIPE_MODEL = "udpipe_en_ewt.udpipe"
SPACY_MODEL = "spacy_en_ewt"
RECORD = "peers.json"
# UDPipe 1's default Parsito network, spelled out so the record says what was trained.
UDPIPE_PARSER = (
    "transition_system=projective;transition_oracle=dynamic;embedding_form=50;"
    "embedding_upostag=20;embedding_feats=20;embedding_xpostag=0;embedding_lemma=0;"
    "embedding_deprel=20;hidden_layer=200;batch_size=10;learning_rate=0.02;"
    "learning_rate_final=0.001;l2=0.5"
)
ONE_THREAD = {
    name: "1"
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
}


def blank_columns(text: str, *, keep_tree: bool = False) -> str:
    """CoNLL-U with LEMMA, UPOS, XPOS, FEATS and DEPS ``_`` (HEAD and DEPREL too unless kept).

    Without the tree, what every benchmarked parser reads: the gold tokenization, no gold tags.
    With it, what the UDPipe parser trains on. Comments and multi-word token lines stay (a
    multi-word token's cells are ``_`` already); empty nodes of the enhanced graph go.

    Args:
        text: CoNLL-U.
        keep_tree: keep HEAD and DEPREL.

    Returns:
        The same sentences, blanked.
    """
    lines = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            lines.append(line)
            continue
        cells = line.split("\t")
        if "." in cells[0]:
            continue
        tree = cells[6:8] if keep_tree else ["_", "_"]
        lines.append("\t".join([*cells[:2], "_", "_", "_", "_", *tree, "_", cells[9]]))
    return "\n".join(lines) + "\n"


def train_udpipe(train: Path, dev: Path, dest: Path, iterations: int) -> dict[str, object]:
    """Train the UDPipe 1 parser on blanked ``train`` (``dev`` held out); write it to ``dest``."""
    import ufal.udpipe as udpipe  # the bench extra

    options = f"{UDPIPE_PARSER};iterations={iterations}"
    error = udpipe.ProcessingError()
    started = time.perf_counter()
    train_dev = [
        udpipe_sentences(blank_columns(path.read_text(encoding="utf-8"), keep_tree=True), str(path))
        for path in (train, dev)
    ]
    model = udpipe.Trainer.train("morphodita_parsito", *train_dev, "none", "none", options, error)
    if error.occurred():
        raise SystemExit(f"UDPipe training failed: {error.message}")
    with atomic_open(dest, "wb") as handle:
        handle.write(model)
    version = udpipe.Version.current()
    return {
        "package": f"ufal.udpipe {version.major}.{version.minor}.{version.patch}",
        "method": "morphodita_parsito",
        "tokenizer": "none",
        "tagger": "none",
        "parser": options,
        "input": "EWT train, LEMMA, UPOS, XPOS, FEATS, DEPS blanked, no empty nodes; dev held out",
        "threads": 1,
        "seconds": round(time.perf_counter() - started, 1),
    }


def udpipe_sentences(text: str, name: str) -> object:
    """The sentences of CoNLL-U ``text`` (read from file ``name``) as ``ufal.udpipe.Sentences``."""
    import ufal.udpipe as udpipe

    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(text)
    sentences, sentence, error = udpipe.Sentences(), udpipe.Sentence(), udpipe.ProcessingError()
    while reader.nextSentence(sentence, error):
        sentences.push_back(sentence)
        sentence = udpipe.Sentence()
    if error.occurred():
        raise SystemExit(f"{name}: {error.message}")
    return sentences


def train_spacy(train: Path, dev: Path, dest: Path, steps: int) -> dict[str, object]:
    """Convert the data, write the efficiency parser config and train it into ``dest``."""
    import spacy  # the bench extra

    environment = {**os.environ, **ONE_THREAD}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for split in (train, dev):
            spacy_cli(["convert", str(split), str(work), "--converter", "conllu",
                       "--n-sents", "10"], environment)  # fmt: skip
        config = work / "config.cfg"
        init = ["init", "config", str(config), "--lang", "en", "--pipeline", "parser",
                "--optimize", "efficiency"]  # fmt: skip
        spacy_cli(init, environment)
        overrides = [
            "--paths.train", str(work / f"{train.stem}.spacy"),
            "--paths.dev", str(work / f"{dev.stem}.spacy"),
            "--training.max_steps", str(steps),
            "--training.eval_frequency", str(max(steps // 2, 1)),
            "--gpu-id", "-1",
        ]  # fmt: skip
        spacy_cli(["train", str(config), "--output", str(work / "out"), *overrides], environment)
        scores = json.loads((work / "out" / "model-last" / "meta.json").read_text())
        staged = dest.with_name(f".{dest.name}.tmp")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(work / "out" / "model-last", staged)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(staged, dest)
    return {
        "package": f"spacy {spacy.__version__}",
        "config": " ".join(init[3:]),
        "data": "spacy convert --converter conllu --n-sents 10 of EWT train and dev",
        "max_steps": steps,
        "model": "model-last",
        "dev_scores": {k: scores["performance"].get(k) for k in ("dep_uas", "dep_las")},
        "threads": 1,
        "seconds": round(time.perf_counter() - started, 1),
    }


def spacy_cli(arguments: list[str], environment: dict[str, str]) -> None:
    """Run ``python -m spacy ARGUMENTS``; its output is shown only when it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "spacy", *arguments], env=environment, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"spacy {arguments[0]} failed:\n{done.stdout}\n{done.stderr}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--udpipe-iterations", type=int, default=2)
    parser.add_argument("--spacy-steps", type=int, default=400)
    parser.add_argument("--only", choices=("udpipe", "spacy"), default=None)
    args = parser.parse_args(argv)
    treebank = Path(os.environ.get("UD_ROOT", "")) / EWT
    train, dev = (treebank / SPLITS[split] for split in ("train", "dev"))
    if not train.is_file():
        raise SystemExit(f"{train} not found: set UD_ROOT")
    args.folder.mkdir(parents=True, exist_ok=True)
    record_path = args.folder / RECORD
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    record["treebank"] = str(treebank)
    if args.only in (None, "udpipe"):
        dest = args.folder / UDPIPE_MODEL
        record["udpipe"] = train_udpipe(train, dev, dest, args.udpipe_iterations)
        print(f"UDPipe 1: {dest} ({record['udpipe']['seconds']} s)")
    if args.only in (None, "spacy"):
        dest = args.folder / SPACY_MODEL
        record["spacy"] = train_spacy(train, dev, dest, args.spacy_steps)
        print(f"spaCy: {dest} ({record['spacy']['seconds']} s)")
    with atomic_open(record_path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main()
