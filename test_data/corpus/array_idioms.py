import numpy as np

N = 10
D = 7


def array_idioms(x: "f32[N, D]", w: "f32[D]"):
    # Array methods and reshaping functions as scripts use them.
    flat = x.clip(0, None).flatten()
    y = x.dot(w)
    z = np.broadcast_to(w, (N, D)).ravel()
    a, b = np.array_split(y, 3)[:2]
    return flat, z, np.vstack([y, y * 2]), a.repeat(2), np.isfinite(x).astype(np.float32), np.fliplr(x), b
