"""Runs a compiled kernel in this (child) process, for the lowering's end-to-end test.

usage: run_kernel.py LIB.so SYMBOL IN_DIR OUT_DIR NAME:DTYPE:SHAPE... -- OUT:DTYPE:SHAPE...

Each input NAME is read from IN_DIR/NAME.npy and converted to DTYPE (f32 or f64); SHAPE is
comma-separated (empty for a scalar). The outputs are allocated, filled with NaN, passed after
the inputs as the ABI says, and written to OUT_DIR/OUT.npy. This stands in for ollie's sandboxed
runner until that exists; the kernel never runs inside ollie's process either way.
"""

import ctypes
import os
import sys

import numpy


def parse(spec):
    name, dtype, shape = spec.split(":")
    return name, {"f32": numpy.float32, "f64": numpy.float64}[dtype], tuple(int(d) for d in shape.split(",") if d)


def main():
    lib, symbol, in_dir, out_dir, *rest = sys.argv[1:]
    split = rest.index("--")
    inputs = [parse(s) for s in rest[:split]]
    outputs = [parse(s) for s in rest[split + 1:]]
    arrays = [numpy.ascontiguousarray(numpy.load(os.path.join(in_dir, n + ".npy")).astype(t)) for n, t, _ in inputs]
    results = [numpy.full(shape, numpy.nan, dtype=t) for _, t, shape in outputs]
    kernel = getattr(ctypes.CDLL(os.path.abspath(lib)), symbol)
    kernel.restype = None
    kernel(*[a.ctypes.data_as(ctypes.c_void_p) for a in arrays + results])
    os.makedirs(out_dir, exist_ok=True)
    for (name, _, _), r in zip(outputs, results):
        numpy.save(os.path.join(out_dir, name + ".npy"), r)


if __name__ == "__main__":
    main()
