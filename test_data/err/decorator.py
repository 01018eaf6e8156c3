import numpy as np
import ollie


@ollie.kernel(search="10m")
def fine(x: "f32[4]"):
    return np.exp(x)


@np.vectorize
def k(x: "f32[4]"):
    return np.exp(x)
