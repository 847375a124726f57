"""Build of the optional C fast path (everything else is in pyproject.toml).

``optional=True``: without a C compiler (or Python headers) the install still succeeds and
the sandbox runs its pure-Python path (spade_sandbox.native says which one is active).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "spade_sandbox._fast",
            ["src/spade_sandbox/_fast.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ]
)
