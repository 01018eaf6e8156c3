import numpy as np

B, T, D = 2, 12, 16


def padded_attention(q: "f32[B, T, D]", k: "f32[B, T, D]", v: "f32[B, T, D]", keep: "bool[B, T]"):
    # Attention over a padded batch: keys a padding mask drops get no weight, and rows of
    # padding queries are zeroed; a mask of a causal triangle and the padding combined.
    s = q @ k.transpose(0, 2, 1) / np.sqrt(D)
    causal = np.tril(np.ones((T, T), dtype=bool))
    allowed = keep[:, None, :] & causal[None, :, :]
    s = np.where(allowed, s, -1e9)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    out = p @ v
    return np.where(keep[:, :, None], out, 0.0)
