"""`pip install ./python`: builds the native module with CMake.

The module holds the whole compiler (the driver runs in-process), so this
configures the repository's CMake build (scripts/build.sh's toolchain:
clang-22, lld, Ninja, Release) and builds its `pipedream-python` target,
then ships build/python/pipedream/_pipedream*.so with the package.

  PIPEDREAM_BUILD_DIR=DIR   reuse (and update) that build directory instead
                            of a fresh one under pip's build tree
  CMAKE_BUILD_PARALLEL_LEVEL=N   parallel jobs (default 2)
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("PIPEDREAM_BUILD_DIR") or os.path.join(
            os.path.abspath(self.build_temp), "cmake")
        if not os.path.exists(os.path.join(build, "build.ninja")):
            subprocess.check_call([
                "cmake", "-G", "Ninja", "-S", ROOT, "-B", build,
                "-DCMAKE_BUILD_TYPE=Release",
                "-DPIPEDREAM_TEST_PYTHON=" + sys.executable])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", build, "--target",
                               "pipedream-python", "-j", jobs])
        built = glob.glob(os.path.join(build, "python", "pipedream",
                                       "_pipedream*.so"))
        if not built:
            raise RuntimeError(
                "%s: no python/pipedream/_pipedream*.so after the build "
                "(is pybind11 installed? Debian: pybind11-dev python3-dev)"
                % build)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[Extension("pipedream._pipedream", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
