import numpy as np


def expand_concat_stack(a: "f32[3, 4]", b: "f32[3, 2]"):
    e1 = np.expand_dims(a, 0)
    e2 = np.expand_dims(a, axis=-1)
    e3 = np.expand_dims(b, axis=(0, 2))
    cat = np.concatenate([a, b], axis=-1)
    cat0 = np.concatenate((a, a, a))
    st = np.stack([a, 2 * a], axis=1)
    st0 = np.stack((b, b))
    return e1, e2, e3, cat, cat0, st, st0
