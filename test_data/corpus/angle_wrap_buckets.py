import math

import numpy as np

N = 512
BIN = 0.25


def wrap_and_bucket(theta: "f32[N]", x: "f32[N]", step: "f32[N]"):
    # Angles wrapped to [-pi, pi), values bucketed by floor division, a sawtooth by fmod.
    wrapped = (theta * 3.0 + math.pi) % (2 * math.pi) - math.pi
    bucket = x // BIN
    phase = np.fmod(x * 7.0, 1.5)
    # Division by a data-dependent step (numpy's floor division and remainder of floats).
    q = np.floor_divide(x, np.abs(step) + 0.5)
    r = np.remainder(x, np.abs(step) + 0.5)
    return wrapped, bucket, phase, q + r
