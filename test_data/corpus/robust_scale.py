import numpy as np

N = 64
F = 9


def robust_scale(x: "f32[N, F]", w: "f32[N]"):
    # scikit-learn's RobustScaler: centre on the median, scale by the interquartile range;
    # then the weighted mean of each feature and a clip at the 1st/99th percentiles, as a
    # quantization calibration computes them.
    med = np.median(x, axis=0)
    q1, q3 = np.quantile(x, 0.25, axis=0), np.quantile(x, 0.75, axis=0)
    scaled = (x - med) / (q3 - q1)
    bounds = np.percentile(x, [1, 50, 99], axis=0)
    clipped = np.clip(x, bounds[0], bounds[2])
    wmean, wsum = np.average(x, axis=0, weights=np.abs(w) + 0.1, returned=True)
    avg_all = np.average(x)
    row_avg = np.average(x, axis=1, weights=np.linspace(1.0, 2.0, F))
    hi = np.quantile(x, 0.9, axis=1, keepdims=True)
    return scaled, bounds, clipped, wmean, wsum, avg_all, row_avg, hi
