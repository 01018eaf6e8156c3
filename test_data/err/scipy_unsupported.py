import numpy as np
from scipy.special import gammaln


def f(x: "f32[64]"):
    return gammaln(x)
