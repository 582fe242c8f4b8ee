"""Kernels compiled ahead of time: the encodings' CPU kernels as a native extension built at
install, so that no call in a fresh environment waits for numba.

``pip install`` (and ``pip install -e``) builds the extension ``graphpe._kernels`` with
numba's ahead-of-time compiler (:mod:`graphpe.ops.aot_build`): every kernel of
:data:`AOT_MODULES` that Python calls, at each signature listed in ``aot_signatures.json``
(the signatures ``graphpe warmup``'s workload calls, recorded by
``python -m graphpe.warmup --record``). Its index, ``graphpe/_kernels.json``, maps
each kernel and argument types to the compiled function, and holds the digest of the kernel
sources it was built from.

At import, each module of :data:`AOT_MODULES` ends with :func:`bind`: where the extension
was built from the same sources (its digest equals :func:`source_digest` of the files on
disk: found by content, never by file time), each kernel that has compiled signatures is
replaced by a :class:`Kernel` that calls the compiled function when the arguments' types
match one of them, and numba's dispatcher otherwise. Without the extension (no C compiler at
install, sources edited since), everything runs through numba as before. The same arguments
always take the same path, so results do not depend on what was compiled when; the two
paths compile the same source with the same options for the same CPU, and
``tests/ops/test_aot.py`` checks that they agree.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import os
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

# The modules whose kernels the extension holds: the encodings' CPU kernels (the models'
# kernels compile on first use, in a training run that lasts minutes anyway).
AOT_MODULES = (
    "graphpe.ops.host",
    "graphpe.ops.graph",
    "graphpe.ops.eigen.compiled",
    "graphpe.ops.eigen.hermitian",
    "graphpe.ops.eigen.lanczos",
    "graphpe.ops.eigen.ordering",
    "graphpe.ops.walk.compiled",
    "graphpe.ops.walk.directed",
    "graphpe.ops.walk.sampled",
    "graphpe.ops.propagate.compiled",
    "graphpe.ops.curvature.compiled",
    "graphpe.ops.cycles",
)
EXTENSION = "graphpe._kernels"
INDEX_FORMAT = 3  # the layout of _kernels.json that this module reads
PACKAGE_DIR = Path(__file__).resolve().parents[1]
INDEX_PATH = PACKAGE_DIR / "_kernels.json"
SIGNATURES_PATH = Path(__file__).resolve().parent / "aot_signatures.json"
LAPACK_SHIM = Path(__file__).resolve().parent / "lapack_shim.c"
# GRAPHPE_AOT=0 ignores the extension (every kernel through numba); =record logs the types
# of every kernel call made from Python into GRAPHPE_AOT_RECORD (python -m graphpe.warmup --record).
ENV_SWITCH = "GRAPHPE_AOT"
_LOG = logging.getLogger("graphpe")

# numba's names of numpy dtypes, by the dtype's one-letter code (``dtype.name`` costs ~5 us)
_DTYPE_NAMES = {np.dtype(t).char: np.dtype(t).name for t in (
    np.float64, np.float32, np.float16, np.int64, np.longlong, np.int32, np.int16, np.int8,
    np.uint64, np.ulonglong, np.uint32, np.uint16, np.uint8, np.bool_, np.complex128,
    np.complex64)}
_SCALAR_KEYS = {int: "int64", float: "float64", bool: "bool", type(None): "none",
                str: "str", np.int64: "int64", np.int32: "int32", np.float64: "float64",
                np.float32: "float32", np.bool_: "bool", np.uint8: "uint8"}


def source_paths() -> list[Path]:
    """The files the extension is compiled from: the kernel modules and the LAPACK shim."""
    paths = []
    for name in AOT_MODULES:
        rel = Path(*name.split(".")[1:])
        init = PACKAGE_DIR / rel / "__init__.py"
        paths.append(init if init.exists() else PACKAGE_DIR / rel.with_suffix(".py"))
    return [*paths, LAPACK_SHIM]


def source_digest() -> str:
    """sha256 over the contents of :func:`source_paths` (in order)."""
    digest = hashlib.sha256()
    for path in source_paths():
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


# layout of an array, as numba types it, from its C- and F-contiguity and writeable flags
_C, _F, _WRITEABLE = 0x1, 0x2, 0x400
_LAYOUTS = {bits: ("C" if bits & _C else "F" if bits & _F else "A", bool(bits & _WRITEABLE))
            for bits in range((_C | _F | _WRITEABLE) + 1) if not bits & ~(_C | _F | _WRITEABLE)}


def arg_key(value: Any) -> Any:
    """The type of one kernel argument as numba types it, as a hashable key: ``(dtype code,
    dimensions, (layout, writeable))`` for an array, a name (``"int64"``) for a scalar, a
    tuple of keys behind ``"tuple"`` for a tuple; None for anything else (never compiled
    ahead)."""
    if type(value) is np.ndarray:
        return (value.dtype.char, value.ndim,
                _LAYOUTS[value.flags.num & (_C | _F | _WRITEABLE)])
    key = _SCALAR_KEYS.get(type(value))
    if key is not None:
        return key
    if type(value) is tuple:
        parts = tuple(arg_key(v) for v in value)
        return None if None in parts else ("tuple", *parts)
    return None


def call_key(args: tuple) -> tuple | None:
    """The key of a call's positional arguments, ``tuple(map(arg_key, args))`` (None: an
    argument is never compiled ahead); written out, as it runs on every call."""
    keys = []
    for value in args:
        kind = type(value)
        if kind is np.ndarray:
            keys.append((value.dtype.char, value.ndim,
                         _LAYOUTS[value.flags.num & (_C | _F | _WRITEABLE)]))
            continue
        key = _SCALAR_KEYS.get(kind)
        if key is None:
            key = arg_key(value) if kind is tuple else None
            if key is None:
                return None
        keys.append(key)
    return tuple(keys)


def _array_key(dtype: str, ndim: int, layout: str, readonly: bool = False) -> tuple:
    return (np.dtype(dtype).char, ndim, (layout, not readonly))


# ``aot_build.type_source``'s spelling of numba types, read without numba: each name gives
# the :func:`arg_key` of a value of that type
_TYPE_SOURCE_NAMES = {
    **{name: name for name in _DTYPE_NAMES.values()},
    "boolean": "bool", "none": "none", "unicode_type": "str", "Array": _array_key,
    "UniTuple": lambda dtype, count: ("tuple", *[dtype] * count),
    "Tuple": lambda types: ("tuple", *types),
}


def index_key(source: str) -> Any:
    """:func:`arg_key` of an argument type as the index and ``aot_signatures.json`` spell it
    (``aot_build.type_source``: ``"Array(float64, 2, 'C', readonly=False)"``, ``"int64"``,
    ``"UniTuple(int64, 2)"``)."""
    return eval(source, {"__builtins__": {}}, _TYPE_SOURCE_NAMES)  # (the package's own file)


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` for graphpe's kernels, without importing numba: ``@njit(cache=True,
    nogil=True, ...)`` makes a :class:`Kernel`, which runs a compiled-ahead function where
    the extension has one for the call's argument types, and otherwise creates numba's
    dispatcher (importing numba) on its first such call."""
    if args and callable(args[0]) and not options:
        return Kernel(args[0], {})

    def wrap(py_func: Any) -> Kernel:
        return Kernel(py_func, options)

    return wrap


class Kernel:
    """One compiled kernel: ``py_func`` and its numba ``options``. A call whose argument types
    (:func:`call_key`) are in ``compiled`` runs the extension's function; any other runs
    numba's ``dispatcher``, created on first use. Inside other kernels numba types a Kernel
    as its dispatcher (``_numba_type_``), so kernels call kernels as numba functions do."""

    def __init__(self, py_func: Any, options: dict[str, Any]) -> None:
        self.py_func, self.options = py_func, options
        self.compiled: dict[tuple, Any] = {}
        self.record: set | None = None
        self._dispatcher = None
        functools.update_wrapper(self, py_func)

    @property
    def dispatcher(self) -> Any:
        """numba's dispatcher of the kernel (importing numba on first use)."""
        if self._dispatcher is None:
            with _DISPATCHER_LOCK:
                if self._dispatcher is None:
                    numba = numba_module()
                    while _LAPACK_ROUTINES:  # each bound once, before any kernel is loaded
                        _LAPACK_ROUTINES.pop().bind_symbol()
                    self._dispatcher = numba.njit(**self.options)(self.py_func)
        return self._dispatcher

    @property
    def _numba_type_(self) -> Any:
        from numba.core import types

        return types.Dispatcher(self.dispatcher)

    def signatures_held(self) -> set:
        """The argument types this kernel runs without compiling: its compiled-ahead keys
        and the signatures numba's dispatcher holds (compiled or loaded from its cache), if
        it was created."""
        held = {("ahead", key) for key in self.compiled}
        return held if self._dispatcher is None else held | set(self._dispatcher.overloads)

    @property
    def targetoptions(self) -> dict[str, Any]:  # read by numba's inlining pass
        return self.dispatcher.targetoptions

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.compiled and not kwargs:
            function = self.compiled.get(call_key(args))
            if function is not None:
                return function(*args)
            _log_miss(self, args)
        if self.record is not None:
            _record_call(self, args)
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # (copy, pickle, ... probe for these)
            raise AttributeError(name)
        return getattr(self.dispatcher, name)  # signatures, overloads, ...

    def __repr__(self) -> str:
        return f"Kernel({self.py_func.__qualname__}, {len(self.compiled)} compiled ahead)"


_DISPATCHER_LOCK = threading.Lock()


class LapackRoutine:
    """A LAPACK routine of scipy's Cython LAPACK that kernels call (every argument a pointer,
    Fortran style), bound by symbol name (``graphpe_<name>``) when numba first compiles a
    kernel that calls it; the extension links the same symbols from ``lapack_shim.c``. By
    name rather than as a ctypes pointer: a kernel holding a pointer cannot be cached on
    disk."""

    def __init__(self, name: str, num_args: int) -> None:
        self.name, self.num_args, self._type = name, num_args, None
        _LAPACK_ROUTINES.append(self)

    @property
    def _numba_type_(self) -> Any:
        if self._type is None:
            from numba import types

            self.bind_symbol()
            self._type = types.ExternalFunction(f"graphpe_{self.name}",
                                                types.void(*[types.voidptr] * self.num_args))
        return self._type

    def bind_symbol(self) -> None:
        """Give the symbol its address in numba's JIT (before any kernel that calls it is
        compiled or loaded from numba's cache: a loaded kernel is not typed again)."""
        import llvmlite.binding as llvm
        from numba.extending import get_cython_function_address

        llvm.add_symbol(f"graphpe_{self.name}",
                        get_cython_function_address("scipy.linalg.cython_lapack", self.name))


_LAPACK_ROUTINES: list[LapackRoutine] = []


class FirstCompileNotice:
    """Says once per process, on ``logging.getLogger("graphpe")`` at WARNING (printed to
    stderr where logging is not set up), that numba is compiling a graphpe kernel because
    neither the extension nor numba's disk cache holds it: that first call takes seconds to
    a minute, silently otherwise. Nothing is said when the kernels load from the cache.
    ``enabled = False`` silences it (``graphpe warmup``, which compiles on purpose)."""

    def __init__(self) -> None:
        self.enabled, self.said = True, False

    def on_start(self, event: Any) -> None:
        if self.said or not self.enabled:
            return
        dispatcher = event.data["dispatcher"]
        if not getattr(dispatcher.py_func, "__module__", "").startswith("graphpe."):
            return
        self.said = True
        cache = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
        _LOG.warning(
            "graphpe: compiling its CPU kernels (numba) on first use: seconds to a minute, "
            "once; later processes load them from numba's cache%s. `graphpe warmup` compiles "
            "them all ahead. (The kernels compiled ahead of time: %s.)",
            f" ({cache})" if cache else "", extension_status())

    def on_end(self, event: Any) -> None:
        pass


FIRST_COMPILE_NOTICE = FirstCompileNotice()


def compile_listener(notice: FirstCompileNotice) -> Any:
    """A listener of numba's ``numba:compile`` events that hands them to ``notice``."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            notice.on_start(ev)

        def on_end(self, ev: Any) -> None:
            notice.on_end(ev)

    return Listener()


@cache
def numba_module() -> Any:
    """numba, imported on first need (with :data:`FIRST_COMPILE_NOTICE` listening)."""
    import numba
    from numba.core import event

    event.register("numba:compile", compile_listener(FIRST_COMPILE_NOTICE))
    return numba


def _log_miss(kernel: Kernel, args: tuple) -> None:
    if _LOG.isEnabledFor(logging.DEBUG):
        _LOG.debug("graphpe: %s has no compiled-ahead signature for (%s); numba runs it",
                   kernel.py_func.__qualname__, ", ".join(str(arg_key(a)) for a in args))


def _record_call(kernel: Kernel, args: tuple) -> None:
    numba = numba_module()
    types = tuple(numba.typeof(a) for a in args)
    kernel.record.add((kernel.py_func.__module__, kernel.py_func.__name__, types))


_RECORDED: set = set()


def recorded() -> set:
    """``(module, kernel, numba argument types)`` of every call from Python in this process
    (only when ``GRAPHPE_AOT=record``)."""
    return _RECORDED


@cache
def compiled_table() -> dict[str, list]:
    """``{"module:kernel": [[argument specs, exported name], ...]}`` of the extension, or
    ``{}`` where there is none, it is switched off, or it was built from other sources than
    these (or by another version of this module)."""
    global _TABLE_STATUS
    if os.environ.get(ENV_SWITCH, "1") in ("0", "record"):
        _TABLE_STATUS = f"switched off ({ENV_SWITCH}={os.environ[ENV_SWITCH]})"
        return {}
    if not INDEX_PATH.exists():
        _TABLE_STATUS = "not built at install (a C compiler and numba are needed then)"
        return {}
    try:
        index = json.loads(INDEX_PATH.read_text())
        if index.get("digest") != source_digest() or index.get("format") != INDEX_FORMAT:
            _TABLE_STATUS = ("built from other kernel sources (python -m graphpe.ops.aot_build "
                             "rebuilds it)")
            return {}
        importlib.import_module(EXTENSION)
    except (OSError, ValueError, ImportError) as error:
        _TABLE_STATUS = f"not loadable ({error})"
        return {}
    _TABLE_STATUS = "in use"
    return index["exports"]


_TABLE_STATUS = "not looked up yet"


def extension_status() -> str:
    """Why the kernels compiled ahead of time are or are not in use, in words."""
    compiled_table()
    return _TABLE_STATUS


def bind(namespace: dict) -> None:
    """Give each :class:`Kernel` defined in the module ``namespace`` its compiled-ahead
    functions (or, when recording, the record of its calls). Called at the end of each module
    of :data:`AOT_MODULES`."""
    recording = os.environ.get(ENV_SWITCH) == "record"
    table = compiled_table()
    if not table and not recording:
        return
    module_name = namespace["__name__"]
    extension = importlib.import_module(EXTENSION) if table else None
    for name, value in list(namespace.items()):
        if not isinstance(value, Kernel) or value.py_func.__module__ != module_name:
            continue
        for args, symbol in table.get(f"{module_name}:{name}", []):
            value.compiled[tuple(map(index_key, args))] = getattr(extension, symbol)
        if recording:
            value.record = _RECORDED
