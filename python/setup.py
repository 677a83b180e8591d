"""Builds gantry._gantry with the project's CMake (the target gantry_python) for this interpreter.

Used by `pip install ./python`; the CMake build itself (scripts/build) needs none of this.
GANTRY_CMAKE_ARGS adds configure arguments (e.g. "-DGANTRY_CUDA=OFF"); GANTRY_JOBS the build's jobs."""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = Path(__file__).resolve().parent.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build = Path(self.build_temp).resolve() / "cmake"
        subprocess.check_call(["cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                               "-DGANTRY_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                               "-DGANTRY_BUILD_TESTS=OFF", "-DGANTRY_BUILD_BENCHMARKS=OFF",
                               *shlex.split(os.environ.get("GANTRY_CMAKE_ARGS", ""))])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "gantry_python",
                               "-j", os.environ.get("GANTRY_JOBS", str(os.cpu_count() or 1))])
        built = next((build / "python" / "gantry").glob("_gantry*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(packages=["gantry", "gantry.sweeps"], package_data={"gantry": ["py.typed", "*.pyi"]},
      ext_modules=[Extension("gantry._gantry", sources=[])], cmdclass={"build_ext": CMakeBuild})
