import numpy as np

T = 16
D = 8


def rotary_table(x: "f32[T, D]"):
    # Rotary position embedding with its cos/sin table computed in the kernel.
    half = D // 2
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, D, 2) / D))
    freqs = np.outer(np.arange(T), inv_freq)
    cos, sin = np.cos(freqs), np.sin(freqs)
    x1, x2 = x[:, :half], x[:, half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
