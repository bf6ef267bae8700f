"""Build of the optional C extensions: the trace scanner (src/trainprof/trace/_scan.c) and the
graph loops (src/trainprof/analysis/graph/_loops.c); everything else is in pyproject.toml.

optional=True: where no C compiler is found the install still succeeds and the reader uses its
pure-Python path (same results; reading the 54 MB DDP trace takes 0.41 s instead of 0.19 s,
docs/benchmarks.md). The C uses gcc/clang extensions (__int128, __builtin_clzll): MSVC gets the
pure path.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("trainprof.trace._scan", ["src/trainprof/trace/_scan.c"], extra_compile_args=["-O2"], optional=True),
    # the dependency graph's two node-by-node loops (analysis/graph/chains.py keeps them in Python too)
    Extension("trainprof.analysis.graph._loops", ["src/trainprof/analysis/graph/_loops.c"], extra_compile_args=["-O2"],
              optional=True),
])
