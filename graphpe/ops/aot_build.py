"""Build the ahead-of-time kernel extension ``graphpe._kernels`` (see :mod:`graphpe.ops.aot`).

    python -m graphpe.ops.aot_build             # build into the package (an editable checkout)
    python -m graphpe.warmup --record           # rewrite aot_signatures.json from warmup's calls

``setup.py`` runs :func:`build` when the package is built (``pip install .`` or ``-e .``), in
pip's build environment, which has numba and numpy but not torch: the kernel modules are
imported there with :func:`import_kernel_modules`, which gives them a stand-in ``torch`` (they
use torch only outside their kernels) and skips the package's ``__init__``. Each exported
function forwards to the kernel's numba dispatcher, so the kernel compiles with its own
options (``fastmath``, ``inline``) as under the JIT; the build targets this machine's CPU and
its features, as the JIT does, and releases the GIL around each call (the kernels are
``nogil`` and run on threads). The LAPACK routines the kernels call by symbol are linked from
``lapack_shim.c``, which forwards them to scipy's Cython LAPACK.

This module is loaded by file path in ``setup.py``: it imports nothing from graphpe.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
import types as pytypes
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE.parent


def aot_module():
    """graphpe.ops.aot, loaded from its file (it imports only numpy and the standard library)."""
    if "graphpe.ops.aot" in sys.modules:
        return sys.modules["graphpe.ops.aot"]
    spec = importlib.util.spec_from_file_location("graphpe.ops.aot", HERE / "aot.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["graphpe.ops.aot"] = module
    spec.loader.exec_module(module)
    return module


class _Anything:
    """The stand-in torch's every attribute: callable, subscriptable, usable in annotations."""

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getitem__(self, item):
        return _Anything()

    def __or__(self, other):
        return _Anything()

    __ror__ = __or__


def import_kernel_modules() -> list[pytypes.ModuleType]:
    """Import the modules of ``aot.AOT_MODULES`` with numba's real dispatchers. Where torch
    cannot be imported (pip's build environment), the package ``__init__`` files are skipped
    (their imports need torch) and the kernel modules get a stand-in ``torch``."""
    aot = aot_module()
    os.environ[aot.ENV_SWITCH] = "0"  # the dispatchers themselves, never Kernel wrappers
    # these sources, not an installed copy (pip runs setup.py from a script elsewhere, with
    # neither the checkout nor, on a first install, graphpe on sys.path)
    sys.path.insert(0, str(PACKAGE_DIR.parent))
    try:
        import torch  # noqa: F401
    except ImportError:
        stand_in = pytypes.ModuleType("torch")
        stand_in.__getattr__ = lambda name: _Anything()
        sys.modules["torch"] = stand_in
        for package in ("graphpe", "graphpe.ops", "graphpe.ops.eigen", "graphpe.ops.walk",
                        "graphpe.ops.propagate", "graphpe.ops.curvature"):
            module = pytypes.ModuleType(package)
            module.__path__ = [str(PACKAGE_DIR.joinpath(*package.split(".")[1:]))]
            sys.modules.setdefault(package, module)
    modules = [importlib.import_module(name) for name in aot.AOT_MODULES]
    for module in modules:
        if not Path(module.__file__).resolve().is_relative_to(PACKAGE_DIR):
            raise ImportError(f"{module.__name__} was imported from {module.__file__}, not "
                              f"from the sources being built ({PACKAGE_DIR})")
    return modules


def type_source(t) -> str:
    """A numba type as an expression over ``numba.types`` (:func:`parse_type` reads it; so
    does ``aot.index_key``, without numba, for the call keys)."""
    from numba.core import types

    if isinstance(t, types.Array):
        return f"Array({type_source(t.dtype)}, {t.ndim}, {t.layout!r}, readonly={not t.mutable})"
    if isinstance(t, types.UniTuple):
        return f"UniTuple({type_source(t.dtype)}, {t.count})"
    if isinstance(t, types.Tuple):
        return f"Tuple(({''.join(type_source(x) + ', ' for x in t.types)}))"
    if isinstance(t, types.Boolean):
        return "boolean"
    if isinstance(t, types.NoneType):
        return "none"
    if isinstance(t, types.UnicodeType):
        return "unicode_type"
    if isinstance(t, (types.Integer, types.Float, types.Complex)):
        return str(t)
    raise TypeError(f"no ahead-of-time export for argument type {t}")


def parse_type(source: str):
    from numba.core import types

    return eval(source, {"__builtins__": {}}, vars(types))  # our own type_source strings


def _forwarder(dispatcher, arity: int):
    """``def f(a0, ..., an): return kernel(a0, ..., an)``: compiled by pycc with default
    options, it calls the kernel compiled with the kernel's own."""
    names = ", ".join(f"a{i}" for i in range(arity))
    namespace = {"kernel": dispatcher}
    exec(f"def forward({names}):\n    return kernel({names})\n", namespace)
    return namespace["forward"]


def _patch_numba_aot() -> None:
    """pycc's defaults, changed: the exported wrappers release the GIL, and code is generated
    for this CPU's name and features (the JIT's target), not the architecture's baseline."""
    from numba.core import codegen
    from numba.pycc import compiler

    class ReleasingFlags(compiler.Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = ReleasingFlags

    def features(self):
        return self._get_host_cpu_features() if self._cpu_name == "host" else ""

    codegen.AOTCPUCodegen._customize_tm_features = features


def build(output_dir: Path | None = None, output_file: str | None = None,
          verbose: bool = False) -> Path:
    """Compile every signature of ``aot_signatures.json`` into ``graphpe._kernels`` in
    ``output_dir`` (the package directory it will be imported from; default: this checkout's)
    and write its index there (``_kernels.json``). Returns the extension's path."""
    aot = aot_module()
    modules = {m.__name__: m for m in import_kernel_modules()}
    _patch_numba_aot()
    from numba.pycc import CC

    class KernelCC(CC):
        def _get_mixin_sources(self):
            return [*super()._get_mixin_sources(), str(aot.LAPACK_SHIM)]

        def _get_mixin_defines(self):
            # numba's uncached numba_unpickle gives way to lapack_shim.c's cached one
            return [*super()._get_mixin_defines(),
                    ("numba_unpickle", "graphpe_numba_unpickle_uncached")]

    output_dir = Path(output_dir or PACKAGE_DIR)
    cc = KernelCC(aot.EXTENSION.rpartition(".")[2])
    cc.output_dir = str(output_dir)
    if output_file is not None:
        cc.output_file = output_file
    cc.target_cpu = "host"
    cc.verbose = verbose
    signatures = json.loads(aot.SIGNATURES_PATH.read_text())
    exports: dict[str, list] = {}
    for k, (qualified, entries) in enumerate(sorted(signatures.items())):
        module_name, _, name = qualified.partition(":")
        dispatcher = getattr(modules[module_name], name)
        for j, entry in enumerate(entries):
            args = [parse_type(s) for s in entry["args"]]
            symbol = f"k{k}_{j}"
            cc.export(symbol, parse_type(entry["returns"])(*args))(
                _forwarder(dispatcher, len(args)))
            exports.setdefault(qualified, []).append([entry["args"], symbol])
    cc.compile()
    path = output_dir / cc.output_file
    index = {"digest": aot.source_digest(), "format": aot.INDEX_FORMAT,
             "extension": cc.output_file, "exports": exports}
    (output_dir / aot.INDEX_PATH.name).write_text(json.dumps(index, indent=1, sort_keys=True)
                                                  + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    path = build(verbose=args.verbose)
    print(f"built {path} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
