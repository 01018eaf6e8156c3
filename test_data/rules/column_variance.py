import numpy as np

# Per-feature variance over a batch: a reduction down the columns.
N = 16384
F = 1024


def column_variance(x: "f32[N, F]") -> "f32[F]":
    return x.var(axis=0)
