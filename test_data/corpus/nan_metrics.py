import numpy as np

B = 12
T = 40


def nan_metrics(readings: "f32[B, T]", weights: "f32[T]"):
    # Sensor readings with dropouts: values above 1.5 are missing (NaN), and so is one
    # whole row, which the NaN-ignoring reductions must report as NaN (or 0 for the sum).
    x = np.where(readings > 1.5, np.nan, readings)
    x = np.where(np.arange(B)[:, None] == 3, np.nan, x)
    mean = np.nanmean(x, axis=1)
    total = np.nansum(x, axis=1, keepdims=True)
    peak = np.nanmax(x, axis=1)
    low = np.nanmin(x, axis=0)
    scale = np.nanprod(np.where(x > 0.0, 1.0 + 0.01 * x, x), axis=1)
    spread = np.ptp(readings, axis=1)
    grand = np.nanmean(x)
    cleaned = np.fmax(x, -1.0) + np.fmin(x, weights)
    return mean, total, peak, low, scale, spread, grand, cleaned
