import numpy as np


def f(x: "f32[8, 16]", idx: "i64[8]"):
    # A row's mean picked by index: the gather would read a computed reduction.
    m = x.mean(axis=1)
    return m[idx]
