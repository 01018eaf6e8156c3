import numpy as np

# A global average pool of 7 × 7 maps: each output a reduction of 7 rows of 7, contiguous — one
# run of 49 once merged (not vectorized: 49 is no multiple of the lanes, and a reduction summed
# in another order than the naive kernel's is not the sketches' to choose).
N, C, H, W = 2, 32, 7, 7


def global_avgpool(x: "f32[N, C, H, W]") -> "f32[N, C]":
    return x.mean(axis=(2, 3))
