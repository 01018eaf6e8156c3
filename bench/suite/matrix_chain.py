import numpy as np

N = 1024
R = 16


def matrix_chain(a: "f32[N, N]", b: "f32[N, R]", c: "f32[R, N]", v: "f32[N, 1]") -> "f32[N, 1]":
    # A low-rank update applied to a vector, multiplied left to right: the N x N product
    # (a @ b) @ c costs 2 N^2 R + 2 N^3 FLOPs; right to left, the chain costs a few N^2.
    return ((a @ b) @ c) @ v
