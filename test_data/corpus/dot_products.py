import numpy as np

B = 3
T = 5
D = 8
E = 4


def dot_products(x: "f32[B, T, D]", w: "f32[D, E]", q: "f32[T, D]", k: "f32[T, D]", v: "f32[D]"):
    proj = np.dot(x, w)
    scores = np.inner(q, k) / np.sqrt(D)
    dv = np.dot(v, v)
    mv = np.dot(q, v)
    t = np.tensordot(x, w, axes=([2], [0]))
    t2 = np.tensordot(q, k, axes=2)
    t3 = np.tensordot(w, q, axes=(0, 1))
    return proj, scores, dv, mv, t, t2, t3, np.outer(v, v[:E]), np.dot(2.0, v)
