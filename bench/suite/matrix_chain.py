import numpy as np

N = 1024


def matrix_chain(a: "f32[N, N]", b: "f32[N, N]", v: "f32[N, 1]") -> "f32[N, 1]":
    # Multiplied left to right, as numpy evaluates it: the N x N product a @ b costs 2 N^3
    # FLOPs; right to left, a @ (b @ v) costs 4 N^2.
    return a @ b @ v
