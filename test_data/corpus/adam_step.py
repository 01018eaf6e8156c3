import numpy as np

N = 777
LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
STEP = 10


def adam_step(param: "f32[N]", grad: "f32[N]", m: "f32[N]", v: "f32[N]"):
    # One Adam update with bias correction; the new parameters and both moments.
    m_new = BETA1 * m + (1 - BETA1) * grad
    v_new = BETA2 * v + (1 - BETA2) * grad * grad
    m_hat = m_new / (1 - BETA1 ** STEP)
    v_hat = v_new / (1 - BETA2 ** STEP)
    return param - LR * m_hat / (np.sqrt(v_hat) + EPS), m_new, v_new
