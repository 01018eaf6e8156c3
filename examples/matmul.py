import numpy as np

M = 512
K = 512
N = 512


def matmul(a: "f32[M, K]", b: "f32[K, N]") -> "f32[M, N]":
    return a @ b
