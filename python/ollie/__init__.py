"""ollie from Python: search for a faster C kernel for a numpy function, verify one, call it.

    import ollie
    k = ollie.optimize(softmax, time="60s")      # a module-level function: its module is the spec
    y = k(x)                                     # the kernel ollie found, on numpy arrays
    print(k.speedup, k.fraction_of_roofline)

    @ollie.kernel                                # calls run the cached kernel, else numpy
    def softmax(x: "f32[B, N]"): ...

A spec is a function defined at the top level of a `.py` file (the whole file is read, so its
constants and helpers come along) or a string `"path/to/spec.py::name"`. Everything runs in
the `ollie` executable installed with this package; candidate kernels run in its sandboxed
children, never inside Python.
"""
import inspect
import json
import os
import tempfile

import numpy as np

from ._engine import call, executable, run
from ._errors import OllieError, Rejected, SpecError, UsageError
from ._cached import CachedFunction, kernel
from ._kernel import Kernel, numpy_dtype

__all__ = ["optimize", "check", "lower", "rewrite", "graph", "load", "kernel", "kernels", "Kernel", "CachedFunction", "SpecError", "UsageError", "Rejected", "OllieError", "executable", "__version__"]


def _version():
    try:
        from importlib.metadata import version

        return version("ollie")
    except Exception:
        return "unknown"


__version__ = _version()


def _spec(spec, dims):
    """The command line's spec arguments for a function or a `path::name` string."""
    if isinstance(spec, (str, os.PathLike)):
        selector = os.fspath(spec)
    elif callable(spec):
        path = inspect.getsourcefile(spec)
        if path is None or not path.endswith(".py"):
            raise UsageError(f"the source of {spec!r} is not in a .py file: ollie reads the module a spec function is defined in")
        if spec.__qualname__ != spec.__name__:
            raise UsageError(f"`{spec.__qualname__}` is not defined at the top level of {path}: a spec is a module-level function")
        selector = f"{path}::{spec.__name__}"
    else:
        raise TypeError(f"a spec is a function or a 'path.py::name' string, got {type(spec).__name__}")
    args = [selector]
    for name, value in (dims or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"dims[{name!r}] must be an integer, got {value!r}")
        args += ["--dim", f"{name}={int(value)}"]
    return args


def _seconds(time):
    return f"{time}s" if isinstance(time, (int, float)) else str(time)


def optimize(spec, time="60s", dims=None, out=None, seed=None, resume=False, proposers=None, roofline_target=None, timeout=None, progress=True):
    """Searches for a faster kernel for `spec` for `time` (`"60s"`, `"2m"`, or seconds) and
    returns the best verified one as a `Kernel`. `dims` overrides module constants
    (`{"T": 8192}`); `out` is the output directory (default: a new temporary one); the other
    options are `ollie optimize`'s. The progress shows on the terminal, or in a notebook's
    output; Ctrl-C stops after the evaluation in flight and returns what was found."""
    directory = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="ollie-")
    args = ["optimize", *_spec(spec, dims), "--time", _seconds(time), "--out", directory]
    if seed is not None:
        args += ["--seed", str(seed)]
    if resume:
        args.append("--resume")
    if proposers:
        args += ["--proposers", ",".join(proposers)]
    if roofline_target is not None:
        args += ["--roofline-target", str(roofline_target)]
    if timeout is not None:
        args += ["--timeout", _seconds(timeout)]
    run(args, stream=progress)
    return Kernel(directory)


def load(directory):
    """The kernel an earlier `optimize` (or `ollie optimize --out DIR`) wrote to `directory`."""
    return Kernel(directory)


def check(spec, kernel, dims=None, flags=None, seed=None, timeout=None, certificate=None):
    """Verifies the C file `kernel` against `spec`, as `ollie check` does. Returns the report
    (a dict: `accepted`, `certificate`) when the kernel is accepted; raises `Rejected` (with the
    counterexample's inputs as arrays) when it is not."""
    with tempfile.TemporaryDirectory(prefix="ollie-check-") as tmp:
        args = ["check", *_spec(spec, dims), os.fspath(kernel), "--json", "--certificate", certificate or os.path.join(tmp, "certificate.json")]
        if flags is not None:
            args += ["--flags", flags]
        if seed is not None:
            args += ["--seed", str(seed)]
        if timeout is not None:
            args += ["--timeout", _seconds(timeout)]
        code, stdout = call(args)
    report = json.loads(stdout)
    if code == 0:
        return report
    raise _rejected(report)


def _rejected(report):
    """`Rejected` from `ollie check --json`'s report, the counterexample's inputs read back."""
    rejection = report.get("rejection") or {}
    kind = rejection.get("kind", "rejected")
    detail = rejection.get("detail") or rejection.get("reason") or rejection.get("log") or ""
    inputs = {}
    directory = report.get("counterexample_dir")
    if directory and os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".npy"):
                inputs[name[:-4]] = _read_npy(os.path.join(directory, name))
    return Rejected(f"rejected ({kind}): {detail}".rstrip(": "), kind, report, inputs)


def _read_npy(path):
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        # numpy saves ml_dtypes.bfloat16 as two-byte voids.
        a = a.view(numpy_dtype("bf16"))
    return a


def lower(spec, dims=None, ir=False, sketch=None, variant=None):
    """The naive C kernel (`ir=True`: its loop-nest IR; `sketch=N`: the search's N-th sketch;
    `variant=N`: of `rewrite`'s N-th graph), as `ollie lower` prints it."""
    args = ["lower", *_spec(spec, dims)]
    if ir:
        args.append("--ir")
    if sketch is not None:
        args += ["--sketch", str(sketch)]
    if variant is not None:
        args += ["--variant", str(variant)]
    return run(args)


def rewrite(spec, dims=None):
    """The graphs algebraic rewriting finds cheaper than the spec's, as `ollie rewrite` prints them."""
    return run(["rewrite", *_spec(spec, dims)])


def kernels():
    """The kernel cache's entries (dicts, newest first), as `ollie kernels --json` lists them."""
    return json.loads(run(["kernels", "--json"]))


def graph(spec, dims=None):
    """The spec's tensor graph in its text form, as `ollie graph` prints it."""
    return run(["graph", *_spec(spec, dims)])
