import numpy as np
from scipy import special

B = 4
T = 30
D = 8
TEMP = 0.5


def soft_pool(h: "f32[B, T, D]", q: "f32[D]"):
    # Attention pooling and a log-sum-exp (smooth maximum) over time.
    w = special.softmax(h @ q / TEMP, axis=1)
    attended = (w[:, :, None] * h).sum(axis=1)
    smooth_max = TEMP * special.logsumexp(h / TEMP, axis=1)
    return attended, smooth_max
