"""The array type aliases used across the project's packages (one definition each)."""

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "FloatArray", "Int32Array", "IntArray"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]
