import numpy as np

N = 40
C = 12


def zero_outliers(x: "f32[N, C]", fill: "f32[C]"):
    # Rows with a far-out value replaced by a fill row; the rest clipped, in a copy.
    y = x.copy()
    z = (y - y.mean(axis=0)) / (y.std(axis=0) + 1e-6)
    y[np.abs(z) > 2.5] = 0.0
    bad_rows = (np.abs(x) > 2.0).any(axis=1)
    y[bad_rows] = fill
    y[0, ::-3] = -1.0
    return y
