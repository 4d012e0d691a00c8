"""Plexus from Python: load a model file on the backend plug-ins and run it
on NumPy arrays (docs/python.md).

    import numpy as np, plexus
    model = plexus.load("digits.onnx")
    out = model.run({"image": np.load("digit-7.npy")})
    print(out["probabilities"].argmax())

A :class:`Runtime` finds the backends: the package's own (``plexus/backends``),
those of the search paths given, and those of ``PLEXUS_BACKEND_PATH``.
"""

import json
import math
import os
import tempfile
import threading
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _plexus
from .errors import (AlreadyExistsError, Error, FailedPreconditionError, IncompatibleError,
                     InternalError, InvalidArgumentError, IOFailedError, NotFoundError,
                     OutOfMemoryError, UnavailableError, UnsupportedError)

__all__ = [
    "AlreadyExistsError", "BACKEND_DIR", "Error", "FailedPreconditionError",
    "IncompatibleError", "InternalError", "InvalidArgumentError", "IOFailedError", "Model",
    "NotFoundError", "OutOfMemoryError", "Runtime", "TensorInfo", "UnavailableError",
    "UnsupportedError", "default_runtime", "info", "load",
]

#: The library's version ("0.1.0").
__version__: str = _plexus.version

#: The directory of the backend plug-ins installed with the package.
BACKEND_DIR: str = os.path.join(os.path.dirname(os.path.abspath(__file__)), "backends")

PathLike = Union[str, "os.PathLike[str]"]


class TensorInfo(NamedTuple):
    """A model input or output: its name, dtype name ("float32") and shape."""

    name: str
    dtype: str
    shape: Tuple[int, ...]


class Runtime:
    """A set of backends, found and created once (a ``plx_runtime``).

    ``search_paths`` (directories or plug-in files) are searched first, then,
    unless ``package_backends`` is false, the package's own backends
    (:data:`BACKEND_DIR`), then ``PLEXUS_BACKEND_PATH``'s directories unless
    ``ignore_environment`` is set (which also ignores ``PLEXUS_BACKENDS``).
    The first backend found with an id wins; the installed C library's own
    directory is never searched. ``backend_options`` maps a backend id to its
    options (``{"cpu_ref": {"threads": 2}}``); an option the backend does not
    declare rejects that backend, with the reason in :meth:`info`.
    ``intra_op_threads`` sets every backend's ``threads`` option it does not
    set (0: each backend's default). ``log_level`` is "error", "warn",
    "info" or "debug" (None: ``PLEXUS_LOG``, else "warn"); the log goes to
    stderr.
    """

    def __init__(self, search_paths: Sequence[PathLike] = (),
                 backend_options: Optional[Mapping[str, Mapping[str, Union[str, int]]]] = None,
                 *, package_backends: bool = True, ignore_environment: bool = False,
                 intra_op_threads: int = 0, log_level: Optional[str] = None) -> None:
        if isinstance(search_paths, (str, bytes, os.PathLike)):
            raise TypeError("search_paths must be a sequence of paths, not one path")
        paths = [os.fsdecode(os.fspath(p)) for p in search_paths]
        if package_backends:
            paths.append(BACKEND_DIR)
        options = []
        for backend_id, keys in (backend_options or {}).items():
            for key, value in keys.items():
                if isinstance(value, bool) or not isinstance(value, (str, int)):
                    raise TypeError(f"backend option {backend_id}.{key}: the value must be a "
                                    f"str or an int, not {type(value).__name__}")
                options.append((backend_id, key, str(value)))
        self._rt = _plexus.Runtime(paths, options, ignore_environment, True, intra_op_threads,
                                   log_level)

    def info(self) -> Dict[str, Any]:
        """The version, the ABI, the model formats, the search path, every backend
        with its capabilities and options, the rejected and skipped plug-ins with
        their reasons, and the notes, as ``plexus info --json`` prints them."""
        return self._rt.info()

    def load(self, path: PathLike, backends: Optional[Sequence[str]] = None, *,
             fallback: bool = True, shapes: Optional[Mapping[str, Sequence[int]]] = None,
             dynamic: bool = False, cache_capacity: int = 0,
             format: Optional[str] = None) -> "Model":
        """Loads the model file at ``path``; see :class:`Model`."""
        return Model(self, path, backends, fallback=fallback, shapes=shapes, dynamic=dynamic,
                     cache_capacity=cache_capacity, format=format)

    def enable_profiling(self, enabled: bool = True) -> None:
        """Starts (or stops) recording trace events: the phases of each load,
        each layer of each execution, copies and imports between backends."""
        self._rt.enable_profiling(enabled)

    def trace(self) -> Dict[str, Any]:
        """The events recorded so far as the Chrome trace-event document
        (``{"traceEvents": [...], "otherData": {...}}``) that
        :meth:`write_trace` writes; the events are kept."""
        fd, path = tempfile.mkstemp(prefix="plexus-trace-", suffix=".json")
        os.close(fd)
        try:
            self._rt.write_trace(path)
            with open(path, encoding="utf-8") as f:
                document: Dict[str, Any] = json.load(f)
                return document
        finally:
            os.unlink(path)

    def write_trace(self, path: PathLike) -> None:
        """Writes the recorded events to ``path`` as Chrome trace-event JSON,
        which Perfetto and chrome://tracing open."""
        self._rt.write_trace(os.fspath(path))

    def trace_event_count(self) -> int:
        """The number of events recorded and not cleared."""
        return self._rt.trace_event_count()

    def clear_trace(self) -> None:
        """Forgets the recorded events."""
        self._rt.clear_trace()

    def counters(self) -> Dict[str, int]:
        """``networks_loaded``, ``inferences_run`` and ``inferences_failed`` since
        the runtime was created."""
        return self._rt.counters()


def _aligned_empty(shape: Tuple[int, ...], dtype: np.dtype, alignment: int) -> np.ndarray:
    """An uninitialised C-contiguous array whose data is aligned to ``alignment``."""
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def _numpy_dtype(kind: str, name: str, dtype: str) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        raise UnsupportedError(f"{kind} '{name}' has dtype {dtype}, for which NumPy has no "
                               f"type") from None


def _prepare_input(value: Any, alignment: int) -> np.ndarray:
    """The array bound for an input: ``value`` itself when it is a C-contiguous
    array aligned to ``alignment`` (the execution reads it in place), else an
    aligned copy."""
    a = np.asarray(value)
    if a.flags.c_contiguous and a.ctypes.data % alignment == 0:
        return a
    copy = _aligned_empty(a.shape, a.dtype, alignment)
    copy[...] = a
    return copy


class Model:
    """A model file loaded on a :class:`Runtime`.

    Its layers are assigned to ``backends`` in order of preference (None:
    every available backend, in the runtime's order); with ``fallback`` a
    layer the first refuses goes to the next that runs it, otherwise every
    refusal is an error. ``shapes`` gives the sizes of open input dims
    (``{"x": [1, 3, 224, 224]}``). With ``dynamic`` the model keeps open
    dims open: each run takes its sizes from the inputs, and a network is
    made for each set of shapes (up to ``cache_capacity`` kept loaded,
    default 8). ``format`` names the file format (None: from the file name).

    Errors raise :class:`plexus.Error` subclasses with the core's message:
    :class:`IOFailedError` for a file that cannot be read,
    :class:`InvalidArgumentError` or :class:`UnsupportedError` for a model
    the importer or the backends cannot take.
    """

    def __init__(self, runtime: Runtime, path: PathLike,
                 backends: Optional[Sequence[str]] = None, *, fallback: bool = True,
                 shapes: Optional[Mapping[str, Sequence[int]]] = None, dynamic: bool = False,
                 cache_capacity: int = 0, format: Optional[str] = None) -> None:
        if isinstance(backends, str):
            backends = [backends]
        self.runtime = runtime
        self.path = os.fspath(path)
        self._m = _plexus.Model(runtime._rt, self.path, None if backends is None else
                                list(backends), fallback, dynamic,
                                None if shapes is None else
                                {k: list(v) for k, v in shapes.items()},
                                cache_capacity, format)
        self._alignment: int = self._m.alignment
        declared = self._m.outputs  # None for a dynamic model
        self._output_names = None if declared is None else [o[0] for o in declared]

    @property
    def dynamic(self) -> bool:
        """Whether each run chooses the input shapes (``dynamic=True``)."""
        return self._m.dynamic

    @property
    def inputs(self) -> Optional[List[TensorInfo]]:
        """The inputs in the model's order; None for a dynamic model (their
        shapes are those of each run's arrays)."""
        ios = self._m.inputs
        return None if ios is None else [TensorInfo(*io) for io in ios]

    @property
    def outputs(self) -> Optional[List[TensorInfo]]:
        """The outputs in the model's order; None for a dynamic model (each run
        returns arrays of its shapes)."""
        ios = self._m.outputs
        return None if ios is None else [TensorInfo(*io) for io in ios]

    @property
    def assignment(self) -> Optional[Dict[str, Any]]:
        """Where each layer runs: ``{"layers": [{"layer", "op", "backend",
        "inserted", "refusals": [{"backend", "reason"}], "fused_from"}],
        "notes": [...], "summary": str}``, the refusals being the fallbacks with
        their reasons; None for a dynamic model."""
        return self._m.assignment

    @property
    def concurrent(self) -> bool:
        """Whether runs from several threads execute at the same time (every
        backend used supports it), rather than one at a time."""
        return self._m.concurrent

    @property
    def alignment(self) -> int:
        """The alignment in bytes of the memory the backends read and write in
        place; the arrays :meth:`run` makes have it."""
        return self._m.alignment

    def memory_report(self) -> List[Dict[str, Any]]:
        """The host's memory plan per backend: ``backend``, ``strategy``, ``bytes``
        per concurrent execution, ``lower_bound``, ``buffer_count``,
        ``tensor_count``; empty where the backends manage their own memory, and
        for a dynamic model."""
        return self._m.memory_report()

    def staged_copy_count(self) -> int:
        """How many inputs and outputs the executions copied through a staging
        buffer instead of reading or writing the arrays in place."""
        return self._m.staged_copy_count()

    def dynamic_stats(self) -> Optional[Dict[str, Any]]:
        """A dynamic model's cache of networks: ``hits``, ``misses``,
        ``failures``, ``evictions``, ``cached``, ``specialize_ms``; None for a
        static model."""
        return self._m.dynamic_stats()

    def run(self, inputs: Mapping[str, Any],
            outputs: Optional[Mapping[str, np.ndarray]] = None) -> Dict[str, np.ndarray]:
        """Executes the model once and returns ``{output name: array}``.

        ``inputs`` maps every input's name to an array (or what
        ``numpy.asarray`` makes one of) of its dtype and shape; a C-contiguous
        array aligned to :attr:`alignment` is read in place, another is copied
        first. ``outputs`` may give arrays (C-contiguous, of the output's dtype
        and shape) that the execution writes, returned as they are; the
        others are made here, aligned, and written in place where the
        backend allows. A wrong dtype or shape, an unknown or a missing input
        raises :class:`InvalidArgumentError` naming it. The GIL is released
        while the model executes: threads may run the same model at once.
        """
        alignment = self._alignment
        bound = [(name, _prepare_input(value, alignment)) for name, value in inputs.items()]
        if not outputs:
            return dict(self._m.run(bound, self._new_output))
        given = dict(outputs)
        if self._output_names is not None:  # a dynamic model's are checked after the run
            for name in given:
                if name not in self._output_names:
                    raise InvalidArgumentError(
                        f"'{name}' is not an output of the model (its outputs: "
                        f"{', '.join(self._output_names)})")
        used = set()

        def alloc(name: str, dtype: str, shape: Tuple[int, ...]) -> np.ndarray:
            if name in given:
                used.add(name)
                return given[name]
            return self._new_output(name, dtype, shape)

        result = dict(self._m.run(bound, alloc))
        unknown = [name for name in given if name not in used]
        if unknown:
            raise InvalidArgumentError(f"'{unknown[0]}' is not an output of the model (its "
                                       f"outputs: {', '.join(result)})")
        return result

    def _new_output(self, name: str, dtype: str, shape: Tuple[int, ...]) -> np.ndarray:
        """The array that output ``name`` is written to: new, aligned."""
        return _aligned_empty(shape, _numpy_dtype("output", name, dtype), self._alignment)


_default_lock = threading.Lock()
_default: Optional[Runtime] = None


def default_runtime() -> Runtime:
    """The runtime :func:`load` uses without one: ``Runtime()``, made at the first
    call and kept."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runtime()
        return _default


def load(path: PathLike, backends: Optional[Sequence[str]] = None, *,
         runtime: Optional[Runtime] = None, fallback: bool = True,
         shapes: Optional[Mapping[str, Sequence[int]]] = None, dynamic: bool = False,
         cache_capacity: int = 0, format: Optional[str] = None) -> Model:
    """Loads a model file on ``runtime`` (default: :func:`default_runtime`);
    see :class:`Model` for the arguments."""
    return Model(runtime or default_runtime(), path, backends, fallback=fallback,
                 shapes=shapes, dynamic=dynamic, cache_capacity=cache_capacity, format=format)


def info(search_paths: Sequence[PathLike] = (), *, package_backends: bool = True,
         ignore_environment: bool = False) -> Dict[str, Any]:
    """What a new :class:`Runtime` with these arguments finds: the version, the
    ABI, the model formats, the search path, the backends with their
    capabilities, and the rejected plug-ins with their reasons."""
    return Runtime(search_paths, package_backends=package_backends,
                   ignore_environment=ignore_environment).info()
