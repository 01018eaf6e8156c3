import numpy as np


def transcendental(x: "f32[8, 300]"):
    return np.exp(x), np.log(np.abs(x)), np.tanh(x)
