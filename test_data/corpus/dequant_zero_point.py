import numpy as np

R = 16
C = 32
G = 8


def dequant_zero_point(q: "u8[R, C]", zero: "u8[R, C // G]", scale: "f16[R, C // G]") -> "f16[R, C]":
    # Asymmetric 8-bit weights in groups of G columns: (q - zero) * scale, as GPTQ-style
    # loaders dequantize them, the zero points subtracted in int32 (uint8 would wrap).
    z = np.repeat(zero, G, axis=1).astype(np.int32)
    s = np.repeat(scale, G, axis=1)
    return ((q.astype(np.int32) - z) * s).astype(np.float16)
