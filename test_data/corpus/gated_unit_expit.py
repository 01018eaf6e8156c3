import numpy as np
import scipy.special as sp

N = 24
D = 32


def swiglu_expit(x: "f32[N, D]", w_gate: "f32[D, 2 * D]", w_up: "f32[D, 2 * D]"):
    g = x @ w_gate
    u = x @ w_up
    return g * sp.expit(g) * u
