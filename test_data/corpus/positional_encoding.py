import numpy as np

B = 2
MAX_LEN = 48
D_MODEL = 64


def add_positional_encoding(x: "f32[B, MAX_LEN, D_MODEL]") -> "f32[B, MAX_LEN, D_MODEL]":
    # The sinusoidal table of "Attention Is All You Need", filled the way tutorials fill it.
    pe = np.zeros((MAX_LEN, D_MODEL), dtype=np.float32)
    position = np.arange(0, MAX_LEN, dtype=np.float32)[:, np.newaxis]
    div_term = np.exp(np.arange(0, D_MODEL, 2, dtype=np.float32) * -(np.log(10000.0) / D_MODEL))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return x + pe[np.newaxis, :, :]
