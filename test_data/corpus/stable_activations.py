import numpy as np

N = 64


def stable_activations(x: "f32[N]", y: "f32[N]"):
    softplus = np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))
    log_sigmoid = -np.logaddexp(0.0, -x)
    pairwise = np.logaddexp(x, y)
    elu = np.where(x > 0, x, np.expm1(x))
    symlog = np.sign(x) * np.log1p(np.abs(x))
    return softplus, log_sigmoid, pairwise, elu, symlog
