"""Serve parsers over HTTP, compatible with UDPipe 2's REST API.

Example: ``python serve.py models=en_ewt,fr_sequoia port=8080``, then::

    curl -F data='The cat sat on the mat.' -F tokenizer= -F tagger= -F parser= http://127.0.0.1:8080/process

The models are loaded once by name (:func:`biaffine.models.load`, never a path) and served by
:func:`biaffine.serving.create_app` under uvicorn until SIGINT or SIGTERM, which lets the
requests in flight finish. ``runtime=onnx onnx_dir=DIR`` serves each name from the export
folder ``DIR/NAME`` (``python -m biaffine.export model=NAME output=DIR/NAME``) in ONNX Runtime,
without importing torch, nor numba where the export compiled the decoders ahead of time.
"""

import logging
import os
import socket
import sys
import typing
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

import decoding
from biaffine import installed
from biaffine.cli import (
    check_positive,
    check_threads,
    check_types,
    freeze_loaded,
    refuse_missing,
    refuse_unknown_settings,
    report_user_errors,
    settings_of,
)

RUNTIMES = ("torch", "onnx")

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="conf", config_name="serve")
def main(cfg: DictConfig) -> None:
    """Serve until stopped; a user error prints one line on stderr and exits with status 2."""
    report_user_errors(lambda: _serve(cfg))


def _serve(cfg: DictConfig) -> None:
    refuse_missing(OmegaConf.missing_keys(cfg))  # models=
    try:
        import uvicorn

        from biaffine.serving import Limits, create_app
    except ImportError as error:
        raise ValueError(
            f"serve.py needs the serve extra ({error}): pip install '.[serve]'"
        ) from None
    _check_settings(cfg, Limits)

    names = [cfg.models] if isinstance(cfg.models, str) else list(cfg.models)
    loaded = _load(cfg, names)
    freeze_loaded()  # the models stay loaded until the server stops
    app = create_app(
        loaded,
        default_model=cfg.default_model,
        acknowledgements={name: _acknowledgements(name) for name in names},
        limits=Limits(**OmegaConf.to_container(cfg.limits)),
        batch_wait_s=cfg.batch_wait_ms / 1000,
        max_batch_requests=cfg.max_batch_requests,
        max_tokens=cfg.max_tokens,
    )
    uvicorn.run(
        app,
        host=cfg.host,
        port=cfg.port,
        timeout_graceful_shutdown=cfg.graceful_shutdown_s,
        log_level="info",
        # A GET query as long as a body may be, refused by the app (414) above that, not by a
        # reset connection above h11's 16 KiB default.
        h11_max_incomplete_event_size=cfg.limits.max_body_bytes + 65536,
    )
    # SIGINT returns here (status 0, as uvicorn leaves it); SIGTERM, which uvicorn raises again
    # with its default action once it has stopped, ends the process before it gets here.
    _leave_abandoned_batch(app.state.batcher)


def _leave_abandoned_batch(batcher: Any) -> None:
    """Exit now, with status 0, if the worker thread is still parsing a batch.

    Its requests were answered 503 when ``graceful_shutdown_s`` ran out; Python would wait for
    the thread at exit for as long as the parse takes (minutes for a large request). The
    server writes nothing but its log, flushed first.
    """
    if not batcher.busy:
        return
    log.warning("stopping without the batch still being parsed (its requests got a 503)")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


SETTING_TYPES = {
    "host": str,
    "port": int,
    "max_tokens": int,
    "max_batch_requests": int,
    "batch_wait_ms": float,
    "graceful_shutdown_s": float,
}
"""The settings checked before the models load: a wrong one failed after the loading (a
traceback and status 1 for ``port=99999``, uvicorn's status 3 for ``port=abc``), or made a
server that refused every request (``max_tokens=0``: 400s blaming the client)."""


def _check_settings(cfg: DictConfig, limits: type) -> None:
    """Refuse a setting of the wrong type or range, or a port this host cannot listen on.

    Raises:
        ValueError: naming the setting.
    """
    check_types(cfg, SETTING_TYPES, "", nullable=())
    check_threads(cfg.threads)
    check_types(cfg.limits, typing.get_type_hints(limits), "limits", nullable=())
    check_positive(cfg.limits, "limits")
    for key, least in (("max_tokens", 1), ("max_batch_requests", 1), ("batch_wait_ms", 0)):
        if cfg[key] < least:
            raise ValueError(f"{key}={cfg[key]}: give {least} or more")
    if cfg.graceful_shutdown_s < 0:
        raise ValueError(f"graceful_shutdown_s={cfg.graceful_shutdown_s}: give 0 or more")
    if not 0 <= cfg.port <= 65535:
        raise ValueError(f"port={cfg.port}: give a port in 0..65535 (0: any free one)")
    _check_listening(cfg.host, cfg.port)


def _check_listening(host: str, port: int) -> None:
    """Refuse a host this machine does not have, or a port already taken, before loading.

    uvicorn found either only after the models had loaded, and exited with status 3.
    """
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, protocol, _, address = found[0]
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as error:
        raise ValueError(f"host={host} port={port}: cannot listen there ({error})") from None


def _load(cfg: DictConfig, names: list[str]) -> dict:
    """Name -> :class:`biaffine.serving.served.Served`, in the runtime ``cfg`` names."""
    from biaffine.serving.served import OnnxServed, TorchServed

    if cfg.runtime not in RUNTIMES:
        raise ValueError(f"runtime={cfg.runtime}; expected one of {', '.join(RUNTIMES)}")
    if cfg.runtime == "torch":
        if cfg.onnx_dir is not None:
            raise ValueError("onnx_dir= is read with runtime=onnx: give runtime=onnx")
        return {
            name: TorchServed.load(name, threads=cfg.threads, device=cfg.device) for name in names
        }
    if cfg.onnx_dir is None:
        raise ValueError("runtime=onnx needs onnx_dir=DIR, holding an export folder per model")
    if cfg.device != "cpu":
        raise ValueError(f"device={cfg.device} with runtime=onnx: it runs on the CPU")
    for name in names:
        installed.require(name)  # a name, never a path: the same names as the torch runtime
    decoding.use_compiled()  # where built (python -m biaffine.export): about 130 MiB less
    return {name: OnnxServed.load_model(name, cfg.onnx_dir, threads=cfg.threads) for name in names}


def _acknowledgements(name: str) -> list[str]:
    """The treebank a shipped model learned from, with its licence, from the model's card."""
    treebank = installed.find(name).card.get("treebank")
    if not treebank:
        return []
    return [f"{treebank['name']} ({treebank['licence']}), https://github.com/{treebank['source']}"]


def _bracket_models(argv: list[str]) -> list[str]:
    """``models=a,b`` as ``models=[a,b]``: Hydra would read a bare comma list as a sweep."""
    return [
        f"models=[{arg[len('models=') :]}]"
        if arg.startswith("models=") and "," in arg and "[" not in arg
        else arg
        for arg in argv
    ]


if __name__ == "__main__":
    sys.argv = _bracket_models(sys.argv)
    known = settings_of(Path(__file__).parent / "conf", "serve")
    report_user_errors(lambda: refuse_unknown_settings(sys.argv[1:], known))
    main()
