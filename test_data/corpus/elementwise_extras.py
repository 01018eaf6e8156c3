import numpy as np

N = 256


def elementwise_extras(re: "f32[N]", im: "f32[N]", a: "f32[N]", b: "f32[N]"):
    # The magnitude of a complex signal held as real and imaginary parts, a step function,
    # log-sum in base 2 (log-probabilities in bits), a float64 power, and NaN-ignoring
    # extremes of a signal with gaps.
    mag = np.hypot(re, im)
    big = np.hypot(re * 1e30, im * 1e30)
    step = np.heaviside(a, 0.5)
    step_at = np.heaviside(np.round(b), a)
    bits = np.logaddexp2(a, b)
    same = np.logaddexp2(a, a)
    pw = np.float_power(np.abs(a), 1.5)
    gaps = np.where(b > 0.8, np.nan, b)
    hi = np.fmax(gaps, a)
    lo = np.fmin(a, gaps)
    both = np.fmax(gaps, np.where(a > 0.8, np.nan, a))
    return mag, big, step, step_at, bits, same, pw, hi, lo, both, np.positive(a)
