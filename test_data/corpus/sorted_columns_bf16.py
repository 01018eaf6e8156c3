import numpy as np
import ml_dtypes

R = 24
C = 10


def sorted_columns_bf16(w: "bf16[R, C]", scores: "f32[R, C]"):
    # Each column of a bfloat16 weight sorted (values stay bfloat16), the flattened weights'
    # smallest and largest, and each column's row order by score, stable.
    flat = np.sort(w, axis=None)
    return np.sort(w, axis=0), flat[:4], flat[-4:], np.argsort(scores, axis=0, kind="stable")
