import numpy as np

T = 7
D = 4


def attention_masks(q: "f32[T, D]", k: "f32[T, D]", v: "f32[T, D]", bias: "f32"):
    s = q @ k.T / np.sqrt(D) + bias
    allowed = np.arange(T)[:, None] >= np.arange(T)[None, :]
    s = np.where(allowed, s, float("-inf"))
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(-1)[:, None]
    alt = np.where(allowed, s, np.float32(-1e9))
    out = np.matmul(w, v)
    chain = q @ k.T @ v @ np.transpose(k) @ q
    scores = np.einsum('td,sd->ts', q, k)
    return (out, alt.sum(axis=(-1,)), chain, scores[..., :3], np.stack((q, k), axis=-1).reshape(q.shape[0], -1))
