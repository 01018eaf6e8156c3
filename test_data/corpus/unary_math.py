import numpy as np


def unary_math(x: "f32[3, 7]"):
    a = np.exp(x)
    b = np.log(np.abs(x) + 1)
    c = np.sqrt(np.abs(x))
    d = np.tanh(x)
    e = np.abs(x) + abs(x)
    f = -x + (+x)
    return a, b, c, d, e, f
