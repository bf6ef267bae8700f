"""Build of the optional C scanner (src/trainprof/trace/_scan.c); everything else is in pyproject.toml.

optional=True: where no C compiler is found the install still succeeds and the reader uses its
pure-Python path (same results, ~3x slower reading; docs/benchmarks.md).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("trainprof.trace._scan", ["src/trainprof/trace/_scan.c"],
                             extra_compile_args=["-O2"], optional=True)])
