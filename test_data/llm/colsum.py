import numpy as np

N = 1024


def colsum(x: "f32[N, N]") -> "f32[N]":
    return x.sum(axis=0)
