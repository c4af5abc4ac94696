"""Several processes, one job: the process group ``torchrun`` sets up, seen as a :class:`World`.

A launcher (``train.py``, ``predict.py``, a test) opens the group with :func:`process_group`;
library code asks :func:`world` who it is, and works unchanged in a single process, where no
group exists (no torchrun): then :func:`world` is ``World(rank=0, size=1)`` and every
collective below returns its argument.

``torchrun`` passes ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``
in the environment; the backend follows the device: gloo on CPU, nccl on GPU (one GPU per
process, the one of its ``LOCAL_RANK``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

import torch
import torch.distributed as dist

__all__ = [
    "World",
    "broadcast",
    "gather",
    "launched",
    "local_device",
    "process_group",
    "sum_floats",
    "world",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class World:
    """This process's place in the job.

    Attributes:
        rank: 0 .. size-1; rank 0 scores dev and writes every file.
        size: number of processes.
        local_rank: rank among the processes of this machine (picks the GPU).
    """

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Whether this process writes files and scores dev (rank 0)."""
        return self.rank == 0


def launched() -> bool:
    """Whether this process was started by ``torchrun`` (or anything setting ``WORLD_SIZE``)."""
    return "WORLD_SIZE" in os.environ


def world() -> World:
    """The world of the open process group; a single process when none is open."""
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
    return World(rank=dist.get_rank(), size=dist.get_world_size(), local_rank=local)


@contextlib.contextmanager
def process_group(device: torch.device, *, timeout_s: float = 1800.0) -> Iterator[World]:
    """Join the process group ``torchrun`` describes in the environment, for the ``with`` block.

    Without torchrun (no ``WORLD_SIZE``) nothing is opened and the world is a single process.

    Args:
        device: the device the job runs on: gloo for a CPU, nccl for CUDA (each process then
            takes ``cuda:LOCAL_RANK`` as its current device).
        timeout_s: how long a collective waits for the other processes before failing (rank 0
            scoring dev keeps the others waiting that long at most).

    Yields:
        This process's :class:`World`.
    """
    if not launched():
        yield World()
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    try:
        yield world()
        # Every rank has finished before any tears the group down (rank 0 hosts the store).
        dist.barrier()
    finally:
        dist.destroy_process_group()


def local_device(device: torch.device, here: World) -> torch.device:
    """The device of this process: ``cuda`` becomes ``cuda:LOCAL_RANK`` with several processes.

    Raises:
        ValueError: a numbered GPU (``cuda:N``) with several processes, which would all share it.
    """
    if here.size == 1 or device.type != "cuda":
        return device
    if device.index is not None and torch.device(f"cuda:{here.local_rank}") != device:
        raise ValueError(
            f"device={device} with {here.size} processes: use device=cuda, and each process "
            "takes the GPU of its LOCAL_RANK"
        )
    return torch.device("cuda", here.local_rank)


def broadcast(value: T, here: World) -> T:
    """Rank 0's ``value`` on every rank (any picklable object)."""
    if here.size == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(value: T, here: World) -> list[T] | None:
    """Every rank's ``value`` in rank order on rank 0; None on the other ranks."""
    if here.size == 1:
        return [value]
    values: list[T] | None = [None] * here.size if here.is_main else None  # type: ignore[list-item]
    dist.gather_object(value, values, dst=0)
    return values


def sum_floats(values: list[float], here: World, device: torch.device) -> list[float]:
    """Element-wise sums of ``values`` over all ranks (float64, so word counts stay exact)."""
    if here.size == 1:
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return tensor.tolist()
