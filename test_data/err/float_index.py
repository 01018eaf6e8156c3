import numpy as np


def f(x: "f32[8, 16]", pos: "f32[8]"):
    # Bucketing a float by truncation: the kernel's rounding could pick another column.
    return np.take_along_axis(x, (pos * 4).astype(np.int64)[:, None], axis=1)
