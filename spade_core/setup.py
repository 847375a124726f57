"""Build of the optional C path of registration (everything else is in pyproject.toml).

``optional=True``: without a C compiler (or Python headers) the install still succeeds and
registration runs its pure-Python path (spade_core.native says which one is active).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spade_core._speedups",
            ["src/spade_core/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ]
)
