import numpy as np

# One Adam step on a flat parameter vector: the parameters and both moments are outputs.
N = 4194304


def adam_step(p: "f32[N]", g: "f32[N]", m: "f32[N]", v: "f32[N]"):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    mhat = m2 / (1 - 0.9 ** 10)
    vhat = v2 / (1 - 0.999 ** 10)
    p2 = p - 1e-3 * (mhat / (np.sqrt(vhat) + 1e-8) + 0.01 * p)
    return p2, m2, v2
