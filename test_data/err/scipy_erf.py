import numpy as np
from scipy.special import erf


def gelu_exact(x: "f32[64]"):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))
