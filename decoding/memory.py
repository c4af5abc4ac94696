"""How much memory this process may still take: the searches that could take it all ask first.

A k-best search over every tree of a long sentence, or a beam wider than any sentence needs,
allocates what it is asked for; past the machine's or a container's limit the kernel ends the
process rather than raise a MemoryError. :func:`available` reads the limits that apply, and a
caller refuses a request that would take more than half (:func:`over_half`) in one line.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["CGROUP_NO_LIMIT", "available", "cgroup_free", "over_half"]


def available() -> int | None:
    """The memory this process may still take, in bytes; None where nothing says.

    The machine's, or less where the process's cgroups (:func:`cgroup_free`: a container's
    limit, less what the group holds) or its address-space limit (``ulimit -v``, less what the
    process maps already: a loaded parser maps about 1 GB) say so.
    """
    known = []
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no sysconf, or no name
        known.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    with contextlib.suppress(OSError, ValueError):  # no /proc: not Linux
        free = cgroup_free()
        if free is not None:
            known.append(free)
    with contextlib.suppress(ImportError, ValueError, OSError):  # resource: POSIX only
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            known.append(soft - _mapped_bytes())
    return min(known, default=None)


CGROUP_NO_LIMIT = 2**62
"""A cgroup v1 limit at or above this is none (v1 writes none as the largest int64 it keeps)."""


def cgroup_free(
    proc: Path = Path("/proc/self/cgroup"), mount: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """The memory this process's cgroups let it still take, in bytes; None where none is set.

    Version 2 (the line ``0::PATH`` of ``proc``): ``memory.max`` less ``memory.current``;
    version 1 (``N:memory:PATH``, mounted at ``mount``/memory): ``memory.limit_in_bytes`` less
    ``memory.usage_in_bytes``. Both usages count the page cache, of which the kernel gives back
    the inactive part before it refuses memory: it counts as free (``memory.stat``). The group
    and every group above it count, as the kernel counts them; a container that sees its own
    group at the mount's root, not at PATH, reads the root. The chart's pages are taken as it is
    filled, so a chart over a group's limit ends in the kernel killing the process, not in a
    MemoryError.

    Raises:
        OSError: ``proc`` cannot be read.
    """
    free: list[int] = []
    for line in proc.read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            files = ("memory.max", "memory.current", "inactive_file")
            free += _groups_free(mount, path, *files)
        elif "memory" in controllers.split(","):
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
            free += _groups_free(mount / "memory", path, *files)
    return min(free, default=None)


def _groups_free(base: Path, path: str, limit_file: str, usage_file: str, cache: str) -> list[int]:
    """Each limit less usage, at least 0, of the group at ``base``/``path`` and those above it.

    The usage is less the inactive page cache (``memory.stat``'s ``cache``) where it is said.
    """
    group = base / path.lstrip("/")
    if not group.is_dir():  # a container's own group, seen at the root
        group = base
    free = []
    while True:
        with contextlib.suppress(OSError, ValueError):  # a group without the files: no limit
            limit = (group / limit_file).read_text().strip()
            if limit != "max" and int(limit) < CGROUP_NO_LIMIT:
                used = int((group / usage_file).read_text()) - _stat(group, cache)
                free.append(max(int(limit) - used, 0))
        if group == base or base not in group.parents:
            return free
        group = group.parent


def _stat(group: Path, key: str) -> int:
    """``key``'s value in the group's ``memory.stat``; 0 where it has none."""
    with contextlib.suppress(OSError, ValueError):
        for line in (group / "memory.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def _mapped_bytes() -> int:
    """The address space this process maps (``VmSize``), 0 where /proc does not say."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024  # in kB
    return 0


def over_half(needed: int, memory: int | None) -> bool:
    """Whether ``needed`` bytes are more than half of ``memory`` (None: nothing says so)."""
    return memory is not None and needed > memory // 2
