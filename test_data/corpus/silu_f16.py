import numpy as np

N = 1000


def silu_f16(x: "f16[N]", gate: "f16[N]") -> "f16[N]":
    # Written directly in float16: numpy rounds every intermediate, ollie computes in float32.
    return gate / (1 + np.exp(-gate)) * x
