import numpy as np

N = 128


def quantize_misc(x: "f32[N]", s: "f32[]"):
    # Round-half-up fake quantization to 8 bits, and the base-2 and base-10 helpers around it.
    q = np.clip(np.floor(x / s + 0.5), -128, 127) * s
    up = np.ceil(x * 4.0) / 4.0
    bits = np.log2(np.abs(x) + 1.0)
    decades = np.log10(np.abs(x) + 1e-3)
    scale = np.exp2(np.floor(bits))
    inv = np.reciprocal(s + np.abs(x))
    return q, up, bits, decades, scale, inv
