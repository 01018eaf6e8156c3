import numpy as np


def masked_rows(s: "f32[4, 6]", keep: "f32[4, 6]"):
    # Rows where nothing is kept become NaN in numpy; ollie must agree.
    s = np.where(keep > 0.5, s, -np.inf)
    s = np.where(np.arange(4)[:, None] == 2, -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.maximum(p, 0.25), np.minimum(p, 0.5)
