import numpy as np

T = 24
D = 32


def sinusoidal_positions(x: "f32[T, D]") -> "f32[T, D]":
    # The Transformer's positional encoding as its reference code computes it: each pair of
    # dimensions (i // 2) shares a frequency, even dimensions take the sine and odd ones the
    # cosine (i % 2), added to the embeddings.
    pos = np.arange(T)[:, None]
    i = np.arange(D)[None, :]
    angle = pos / np.power(10000, (2 * (i // 2)) / np.float32(D))
    pe = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    return (x + pe).astype(np.float32)
