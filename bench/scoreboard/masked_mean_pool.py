import numpy as np

# Mean of token embeddings under a padding mask (sentence embeddings).
B = 64
T = 512
D = 768


def masked_mean_pool(x: "f32[B, T, D]", mask: "f32[B, T]") -> "f32[B, D]":
    return (x * mask[:, :, None]).sum(axis=1) / (mask.sum(axis=1)[:, None] + 1e-9)
