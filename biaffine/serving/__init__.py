"""A resident parser behind HTTP, compatible with UDPipe 2's REST API (``serve.py``).

Needs the ``serve`` extra (Starlette and uvicorn). :func:`create_app` takes loaded models by
name (:mod:`biaffine.serving.app`); :mod:`biaffine.serving.jobs` validates and parses requests
without HTTP; :mod:`biaffine.serving.batcher` shares batches between requests that arrive
together.
"""

from biaffine.serving.app import create_app
from biaffine.serving.jobs import Limits

__all__ = ["Limits", "create_app"]
