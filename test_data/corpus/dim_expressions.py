import math

import numpy as np

L = 1 << 5
C = 4
K = 3
D = 2 * C
SCALE = math.sqrt(2 / math.pi)


def dim_expressions(x: "f32[C, L]", w: "f32[C, K]", g: "f32[D // 2, L - K + 1]") -> "f32[C, L - (K - 1)]":
    # A valid depthwise convolution: the output is K - 1 shorter than the input.
    out = w[:, 0:1] * x[:, 0 : L - 2] + w[:, 1:2] * x[:, 1 : L - 1] + w[:, 2:3] * x[:, 2:L]
    scale = SCALE * math.floor(2.5) + math.log(L, 2) - (L >> 3)
    return out * g * scale + math.tau
