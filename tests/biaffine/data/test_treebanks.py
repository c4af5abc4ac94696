"""Treebank location, download (against a local HTTP server only) and dev hold-out."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from biaffine.data import treebanks as data

REPO = "UD_Test-Fake"
TESTS_DATA = Path(__file__).parents[2] / "data"
CONTENT = b"# sent_id = 1\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A local HTTP server on 127.0.0.1 serving tmp_path/served; yields its base URL template."""
    served = tmp_path / "served" / REPO
    served.mkdir(parents=True)
    (served / "xx-ud-train.conllu").write_bytes(CONTENT)
    (served / "xx-ud-test.conllu").write_bytes(CONTENT * 2)
    handler = functools.partial(_QuietHandler, directory=str(tmp_path / "served"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/{{repo}}/{{file}}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


NAMES = {"train": "xx-ud-train.conllu", "dev": None, "test": "xx-ud-test.conllu"}


def test_locate_treebank_finds_existing_files_without_network(tmp_path: Path) -> None:
    folder = tmp_path / REPO
    folder.mkdir()
    for name in ("xx-ud-train.conllu", "xx-ud-test.conllu"):
        (folder / name).write_bytes(CONTENT)
    files = data.locate_treebank(tmp_path, REPO, NAMES, base_url="http://127.0.0.1:9/{file}")
    assert files == data.TreebankFiles(folder / NAMES["train"], None, folder / NAMES["test"])


def test_missing_files_without_download_name_the_path_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"xx-ud-train\.conllu.*data\.download=true"):
        data.locate_treebank(tmp_path, REPO, NAMES)
    assert not (tmp_path / REPO).exists()


def test_download_fetches_missing_files_into_root_repo(tmp_path: Path, server: str) -> None:
    root = tmp_path / "ud"
    files = data.locate_treebank(root, REPO, NAMES, download=True, base_url=server)
    assert files.train == root / REPO / "xx-ud-train.conllu"
    assert files.train.read_bytes() == CONTENT
    assert files.test is not None
    assert files.test.read_bytes() == CONTENT * 2
    assert files.dev is None
    assert sorted(p.name for p in (root / REPO).iterdir()) == sorted(
        ["xx-ud-train.conllu", "xx-ud-test.conllu"]
    )


def test_download_http_404_raises_clear_error_and_leaves_no_file(
    tmp_path: Path, server: str
) -> None:
    root = tmp_path / "ud"
    names = {"train": "missing-train.conllu", "dev": None, "test": None}
    with pytest.raises(data.DownloadError, match=r"missing-train\.conllu.*HTTP 404"):
        data.locate_treebank(root, REPO, names, download=True, base_url=server)
    assert list((root / REPO).iterdir()) == []


def test_unreachable_server_raises_download_error(tmp_path: Path, server: str) -> None:
    dest = tmp_path / "out" / "x.conllu"
    # Port 9 (discard) on localhost is closed here: connection refused, never the internet.
    with pytest.raises(data.DownloadError, match="failed"):
        data.download_file("http://127.0.0.1:9/x.conllu", dest, timeout=5)
    assert list(dest.parent.iterdir()) == []


def test_download_interrupted_midway_leaves_no_partial_file(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_copy(url: str, out, *, timeout: float) -> int:
        out.write(b"partial")
        raise data.DownloadError("connection reset")

    monkeypatch.setattr(data, "_copy_url", failing_copy)
    dest = tmp_path / "out" / "x.conllu"
    with pytest.raises(data.DownloadError):
        data.download_file(server.format(repo=REPO, file="xx-ud-train.conllu"), dest)
    assert list(dest.parent.iterdir()) == []


def test_download_keeps_existing_files_and_fetches_only_missing(
    tmp_path: Path, server: str
) -> None:
    folder = tmp_path / "ud" / REPO
    folder.mkdir(parents=True)
    (folder / "xx-ud-train.conllu").write_bytes(b"local copy\n")
    data.locate_treebank(tmp_path / "ud", REPO, NAMES, download=True, base_url=server)
    assert (folder / "xx-ud-train.conllu").read_bytes() == b"local copy\n"
    assert (folder / "xx-ud-test.conllu").read_bytes() == CONTENT * 2


def test_resolve_root_none_is_project_root_holding_conf() -> None:
    assert (data.resolve_root(None) / "conf" / "train.yaml").is_file()
    assert data.resolve_root("some/where") == Path("some/where")


def test_split_off_dev_is_deterministic_disjoint_and_order_preserving() -> None:
    items = list(range(50))
    train, dev = data.split_off_dev(items, 0.1, seed=3)
    assert len(dev) == 5
    assert sorted(train + dev) == items
    assert train == sorted(train)
    assert dev == sorted(dev)
    assert data.split_off_dev(items, 0.1, seed=3) == (train, dev)
    assert data.split_off_dev(items, 0.1, seed=4) != (train, dev)


def test_split_off_dev_keeps_at_least_one_on_each_side() -> None:
    assert data.split_off_dev([1, 2], 0.01, seed=0)[1] != []
    assert data.split_off_dev([1, 2], 0.99, seed=0)[0] != []
    with pytest.raises(ValueError, match="cannot hold out"):
        data.split_off_dev([1], 0.5, seed=0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        data.split_off_dev([1, 2, 3], 1.0, seed=0)


def write_treebank(root: Path, *names: str) -> dict[str, str | None]:
    folder = root / REPO
    folder.mkdir(parents=True)
    block = (TESTS_DATA / "tiny.conllu").read_text()
    for name in names:
        (folder / name).write_text(block)
    return {split: next((n for n in names if f"-{split}." in n), None) for split in data.SPLITS}


def test_load_splits_holds_out_dev_when_missing_and_logs_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = write_treebank(tmp_path, "xx-ud-train.conllu", "xx-ud-test.conllu")
    with caplog.at_level("INFO", logger="biaffine.data"):
        splits = data.load_splits(tmp_path, REPO, names, dev_fraction=0.3, split_seed=0)
    assert (len(splits.train), len(splits.dev), len(splits.test or [])) == (5, 2, 7)
    assert "no dev split: holding out 2 of 7 train sentences" in caplog.text
    again = data.load_splits(tmp_path, REPO, names, dev_fraction=0.3, split_seed=0)
    assert [s.line for s in again.dev] == [s.line for s in splits.dev]


def test_load_splits_reads_all_three_splits(tmp_path: Path) -> None:
    names = write_treebank(tmp_path, "xx-ud-train.conllu", "xx-ud-dev.conllu")
    splits = data.load_splits(tmp_path, REPO, names)
    assert (len(splits.train), len(splits.dev), splits.test) == (7, 7, None)


def test_load_splits_rejects_test_only_treebank(tmp_path: Path) -> None:
    names = write_treebank(tmp_path, "xx-ud-test.conllu")
    with pytest.raises(ValueError, match="no train split"):
        data.load_splits(tmp_path, REPO, names)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"dev_fraction": "abc"}, "data.dev_fraction='abc': expected a number"),
        ({"train": 123}, "data.train=123: expected a string"),  # a file named 123, as an int
        ({"discover": "abc"}, "data.discover='abc': expected true or false"),  # read as true
        ({"split_seed": "abc"}, "data.split_seed='abc': expected an integer"),
        ({"download": None}, "data.download=null: expected true or false"),
    ],
)
def test_data_settings_of_the_wrong_type_are_refused_by_name(setting, message) -> None:
    given = {"root": "ud", "treebank": "UD_X", "train": "t.conllu", "dev": None, "test": None}
    given |= {"download": False, "discover": False, "dev_fraction": 0.1, "split_seed": 1}
    with pytest.raises(ValueError, match=re.escape(message)):
        data.configured_names(given | setting)
