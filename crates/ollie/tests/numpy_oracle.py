"""Runs a spec's kernel under real numpy: the oracle of ollie's differential tests.

usage: numpy_oracle.py SPEC.py KERNEL INPUT_DIR OUT_DIR [NAME=VALUE ...]

Reads INPUT_DIR/<param>.npy for each parameter (a two-byte void array, as numpy saves
ml_dtypes.bfloat16, read as bfloat16), calls the kernel exactly as the file defines it, and
writes OUT_DIR/out.npy (or out0.npy, out1.npy, ... for a tuple) in float64, with the result's
own dtype name in out.dtype. NAME=VALUE overrides a module-level constant, as `ollie --dim` does.

ollie's reference evaluates every float in float64 (docs/spec.md, "Semantics"), so numpy runs the
spec with float32 aliased to float64 (`np.float32`, and `dtype=`/`astype` spelled any way);
`np.finfo` of that float64 gives float32's limits; everything else is numpy itself.
"""

import importlib.util
import inspect
import os
import sys
import types

import ml_dtypes
import numpy


def as_float64(dtype):
    """float32 in any spelling (np.float32, "float32", "f4") becomes float64."""
    try:
        return numpy.float64 if numpy.dtype(dtype) == numpy.float32 else dtype
    except TypeError:
        return dtype


class Float64Array(numpy.ndarray):
    """An ndarray whose `astype` treats float32 as float64; ufunc results stay of this class."""

    def astype(self, dtype, *args, **kwargs):
        return super().astype(as_float64(dtype), *args, **kwargs)


def float64_numpy():
    proxy = types.ModuleType("numpy")
    proxy.__dict__.update(numpy.__dict__)
    proxy.float32 = numpy.float64

    def wrap(fn):
        def wrapped(*args, **kwargs):
            if "dtype" in kwargs:
                kwargs["dtype"] = as_float64(kwargs["dtype"])
            result = fn(*args, **kwargs)
            return result.view(Float64Array) if isinstance(result, numpy.ndarray) else result

        return wrapped

    for name in ["ones", "zeros", "full", "ones_like", "zeros_like", "full_like", "arange", "asarray", "array"]:
        setattr(proxy, name, wrap(getattr(numpy, name)))
    # The limits of the spec's float32 are float32's, though its arrays are float64 here (the
    # corpus asks float32's limits, never float64's).
    proxy.finfo = lambda t: numpy.finfo(numpy.float32 if numpy.dtype(t.dtype if isinstance(t, numpy.ndarray) else t) == numpy.float64 else t)
    return proxy


def main():
    spec_path, kernel, input_dir, out_dir, *dims = sys.argv[1:]
    proxy = float64_numpy()
    real_import = __builtins__.__import__ if hasattr(__builtins__, "__import__") else __import__

    def spec_import(name, *args, **kwargs):
        if name == "numpy":
            return proxy
        return real_import(name, *args, **kwargs)

    loader_spec = importlib.util.spec_from_file_location("spec_under_test", spec_path)
    module = importlib.util.module_from_spec(loader_spec)
    module.__builtins__ = dict(vars(__import__("builtins")), __import__=spec_import)
    loader_spec.loader.exec_module(module)
    for item in dims:
        name, value = item.split("=", 1)
        setattr(module, name, int(value))
    fn = getattr(module, kernel)
    # Parameters with defaults and no annotation are constants of the kernel, not inputs.
    params = [
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.annotation is not inspect.Parameter.empty or p.default is inspect.Parameter.empty
    ]
    def load(p):
        a = numpy.load(os.path.join(input_dir, p + ".npy"))
        if a.dtype.kind == "V" and a.dtype.itemsize == 2:
            a = a.view(ml_dtypes.bfloat16)
        return a.view(Float64Array)

    args = [load(p) for p in params]
    with numpy.errstate(all="ignore"):
        result = fn(*args)
    results = list(result) if isinstance(result, tuple) else [result]
    os.makedirs(out_dir, exist_ok=True)
    for k, r in enumerate(results):
        name = "out" if len(results) == 1 else f"out{k}"
        numpy.save(os.path.join(out_dir, name + ".npy"), numpy.asarray(r).astype(numpy.float64))
        with open(os.path.join(out_dir, name + ".dtype"), "w") as f:
            f.write(numpy.asarray(r).dtype.name)


if __name__ == "__main__":
    main()
