import numpy as np

N, C = 6, 10


def pick_channels(x: "f32[N, C]", table: "f32[C, C]"):
    # Channels and rows picked by Python lists, as numpy takes a list of integers for an array.
    rgb = x[:, [2, 0, 1]]
    rows = np.take(table, [0, 3, 3, -1], axis=0)
    return rgb * 2.0, rows.sum(axis=1)
