import numpy as np

N = 64
K = 128
D = 32


def vq_codebook(z: "f32[N, D]", codebook: "f32[K, D]"):
    # Vector quantization: the nearest code by ||z||^2 - 2 z.c + ||c||^2 (the ||z||^2 term does
    # not change the argmin, so it is left out, as VQ-VAE code does).
    scores = (codebook ** 2).sum(axis=1)[None, :] - 2 * z @ codebook.T
    return np.argmin(scores, axis=1)
