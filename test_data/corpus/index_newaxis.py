import numpy as np


def index_newaxis(x: "f32[3, 4, 5]"):
    first = x[0]
    last = x[:, -1]
    mid = x[1, ..., 2]
    lifted = x[None]
    inserted = x[:, None, :, np.newaxis]
    tail = x[..., np.newaxis]
    return first, last, mid, lifted, inserted, tail
