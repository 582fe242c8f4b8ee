"""The package's metadata is in pyproject.toml; this file adds the build of the kernels
compiled ahead of time (``graphpe._kernels``, see graphpe/ops/aot.py): numba's ahead-of-time
compiler turns the encodings' kernels into a native extension at install, so that no call
waits for numba's compiler. Where that build fails (no C compiler, an unsupported platform)
the package installs without it and numba compiles the kernels on first use."""

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class BuildKernels(build_ext):
    """Builds ``graphpe._kernels`` with ``graphpe/ops/aot_build.py`` (not from C sources)."""

    def run(self) -> None:
        if os.environ.get("GRAPHPE_AOT") == "0":
            return  # numba compiles every kernel on first use
        for ext in self.extensions:
            path = Path(self.get_ext_fullpath(ext.name))
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                spec = importlib.util.spec_from_file_location(
                    "graphpe_aot_build", ROOT / "graphpe" / "ops" / "aot_build.py")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.build(output_dir=path.parent, output_file=path.name)
            except Exception as error:  # the package works without it, compiling on first use
                print(f"graphpe: the kernels were not compiled ahead of time ({error!r}); "
                      "numba compiles them on first use instead", file=sys.stderr)


setup(ext_modules=[Extension("graphpe._kernels", sources=[])],
      cmdclass={"build_ext": BuildKernels})
