"""Numpy <-> Arrow for fixed-width columns, Python strings to Arrow, and Arrow's kernels, without pandas or
``pyarrow.compute``.

pyarrow imports pandas (about 0.3 s) on its first ``Array.to_numpy``, ``pa.array`` or ``pa.scalar``, even for a
plain int64 column; the scoring path (``toppref evaluate``) needs no pandas, so it moves buffers itself: a view
for Arrow to numpy, a buffer wrap for numpy to Arrow (both zero-copy for contiguous columns). Importing
``pyarrow.compute`` generates a Python wrapper with its docstring for each of Arrow's ~280 kernels (about 50 ms,
a tenth of ``toppref evaluate`` on 20 runs); the scoring path calls the few kernels it uses by name through
:func:`arrow_call` instead, the function those wrappers call (``Array.take`` and ``cast`` would import it too).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

try:
    from pyarrow._compute import RankOptions, SetLookupOptions, SortOptions, call_function
except ImportError:  # pragma: no cover - a pyarrow that moved its private module: the public one has them all
    from pyarrow.compute import RankOptions, SetLookupOptions, SortOptions, call_function

if TYPE_CHECKING:
    import numpy.typing as npt  # annotations only: its import is a tenth of numpy's

__all__ = [
    "RankOptions",
    "SetLookupOptions",
    "SortOptions",
    "arrow_call",
    "from_numpy",
    "strings_to_arrow",
    "to_numpy",
]


def arrow_call(name: str, *arguments: Any, options: Any = None) -> Any:
    """Arrow's kernel ``name`` on ``arguments`` with ``options`` (None: the kernel's defaults), as
    ``pyarrow.compute.<name>`` would call it."""
    return call_function(name, list(arguments), options)


def to_numpy(array: pa.Array | pa.ChunkedArray, *, fill: float | None = None) -> npt.NDArray[Any]:
    """A read-only numpy view of an integer or float Arrow array without nulls; with ``fill``, nulls become
    ``fill`` (in a copy). Other arrays are converted by Arrow (which imports pandas)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    is_number = pa.types.is_integer(kind) or pa.types.is_floating(kind)
    if not is_number or (array.null_count and fill is None):
        converted: npt.NDArray[Any] = array.to_numpy(zero_copy_only=False)
        return converted
    dtype = np.dtype(kind.to_pandas_dtype())
    validity, data = array.buffers()[:2]
    if data is None or len(array) == 0:
        return np.empty(0, dtype=dtype)
    values = np.frombuffer(data, dtype=dtype, count=array.offset + len(array))[array.offset :]
    if not array.null_count:
        return values
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    is_valid = bits[array.offset : array.offset + len(array)].astype(bool)
    return np.where(is_valid, values, np.asarray(fill, dtype=dtype))


def from_numpy(values: npt.NDArray[np.generic]) -> pa.Array:
    """An Arrow array over an integer or float numpy array (zero-copy when contiguous)."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind not in "iuf":  # Arrow packs booleans in bits: no buffer to share
        raise TypeError(f"integer or float values expected, got {values.dtype}")
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def strings_to_arrow(values: Iterable[str]) -> pa.Array:
    """An Arrow string array of Python strings (``pa.array`` would import pandas to check the input's type)."""
    encoded = [value.encode() for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    if offsets[-1] >= 2**31:
        return pa.array(encoded, type=pa.large_binary()).cast(pa.large_string())
    data = b"".join(encoded)
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )
