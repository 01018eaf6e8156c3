import numpy as np

N = 33
F = 7


def robust_scale(x: "f32[N, F]"):
    # Median and median absolute deviation per feature (sklearn's RobustScaler, MAD variant).
    med = np.median(x, axis=0)
    mad = np.median(np.abs(x - med), axis=0)
    return (x - med) / (1.4826 * mad + 1e-6)
