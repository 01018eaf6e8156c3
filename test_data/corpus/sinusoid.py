import numpy as np

T = 16
F = 8


def fourier_features(t: "f32[T, 1]", freqs: "f32[F]") -> "f32[T, 2 * F + 1]":
    # Fourier features of a time column: sines and cosines side by side, and the time itself.
    a = t * freqs
    return np.hstack([t, np.sin(a), np.cos(a)])
