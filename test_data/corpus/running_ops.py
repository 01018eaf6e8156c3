import numpy as np

B, T = 4, 24


def running_ops(x: "f32[B, T]", decay: "f32[B, T]"):
    # Running products, extremes and reversed scans: a survival curve, a running maximum for a
    # drawdown, a discounted return to go.
    survival = np.cumprod(1.0 / (1.0 + np.exp(-decay)), axis=1)
    peak = np.maximum.accumulate(x, axis=1)
    drawdown = x - peak
    floor = np.minimum.accumulate(x[:, ::-1], axis=-1)[:, ::-1]
    to_go = np.flip(np.cumsum(np.flip(x, axis=1), axis=1), axis=1)
    return survival, drawdown, floor, to_go, x.cumprod(axis=0), np.cumprod(x[0, :8])
