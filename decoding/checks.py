"""Reading user inputs (numpy arrays, array-likes, CPU tensors) as numpy arrays, or a ValueError.

The argument checks of the torch-free packages: ``decoding`` and ``transitions`` share them.

Tensors are recognised by duck typing (``requires_grad``, ``detach``, ``device``, ``dtype``), so
the package never imports a deep-learning framework, yet a tensor that numpy cannot read gets a
one-line message that says what to pass instead, not the framework's own error.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def as_array(value: npt.ArrayLike, name: str) -> np.ndarray:
    """``value`` as a numpy array, without copying one that numpy can view.

    Args:
        value: a numpy array, anything ``np.asarray`` reads, or a CPU tensor without grad.
        name: the argument's name, for the message.

    Raises:
        ValueError: for a masked array with masked entries, a tensor that requires grad, lives
            off the CPU or has a dtype numpy lacks (bfloat16), and for anything else
            ``np.asarray`` cannot read (ragged lists).
    """
    if np.ma.is_masked(value):  # np.asarray drops the mask: a masked arc was decoded as any
        raise ValueError(
            f"{name} is a masked array, whose mask would be ignored: pass "
            f"{name}.filled(value) with the value its masked entries take"
        )
    if not isinstance(value, np.ndarray):
        if getattr(value, "requires_grad", False) is True and hasattr(value, "detach"):
            raise ValueError(f"{name} is a tensor that requires grad: pass {name}.detach()")
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise ValueError(f"{name} is on device {device}: pass {name}.cpu()")
        if str(getattr(value, "dtype", "")).endswith("bfloat16"):
            raise ValueError(f"{name} has dtype bfloat16, which numpy lacks: pass {name}.float()")
    try:
        return np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as error:  # numpy's or the tensor's own
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"{name} cannot be read as a numpy array: {message}") from error


def check_float(array: np.ndarray, name: str) -> None:
    """Raise unless ``array`` holds float16, float32 or float64 values (either byte order).

    These are the floats that float64, the kernels' type, holds exactly; ``-inf`` masks arcs, so
    integers will not do, and longdouble would be rounded.
    """
    if array.dtype.kind != "f" or array.dtype.itemsize > 8:
        raise ValueError(
            f"{name} must be float16, float32 or float64 (-inf masks arcs), got dtype {array.dtype}"
        )


def check_integer(array: np.ndarray, name: str) -> None:
    """Raise unless ``array`` holds integers that int64 holds (bool is not an integer here)."""
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {array.dtype}")
    check_int64(array, name)


def check_int64(array: np.ndarray, name: str) -> None:
    """Raise if integer ``array`` holds a value beyond int64, which casting would wrap.

    A uint64 2**64 - 1 became -1: ROOT's head, or "no label".
    """
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} holds {array.max()}, beyond int64")


def check_flag(value: object, name: str) -> bool:
    """``value`` as a bool; ValueError unless it is a Python or numpy bool.

    Truthiness would read ``"no"`` as True and ``None`` as False, and every other type would
    compile the kernels once more for itself (numba specialises on argument types).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_count(value: object, name: str, minimum: int = 0) -> int:
    """``value`` as an int; ValueError unless it is an integer (not a bool) >= ``minimum``.

    ``2.5`` and ``True`` were TypeErrors from inside numpy, or read as 1.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return int(value)
