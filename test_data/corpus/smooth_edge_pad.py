import numpy as np

B = 6
T = 40


def smooth(x: "f32[B, T]"):
    # A [1, 2, 1] / 4 filter along time, the ends held by edge padding.
    xp = np.pad(x, ((0, 0), (1, 1)), mode="edge")
    return (xp[:, :-2] + 2.0 * xp[:, 1:-1] + xp[:, 2:]) / 4.0
