import numpy as np

N = 32
C = 8
EPS = 1e-5


def batchnorm_stats(x: "f32[N, C]", gamma: "f32[C]", beta: "f32[C]"):
    mean = x.mean(axis=0)
    var = ((x - mean) ** 2).mean(axis=0)
    y = (x - mean) / np.sqrt(var + EPS)
    return gamma * y + beta, mean, var
