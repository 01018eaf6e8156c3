import numpy as np

N = 203


def mixed_f64_f16(x: "f16[N]", scale: "f64[N]", bias: "f32[N]"):
    # float16 activations scaled in float64 (numpy promotes), stored back in float16; a float32
    # result beside it. The kernel computes in double: 16-bit loads and stores lane by lane.
    y = x * scale
    return y.astype(np.float16), (x + bias).max()
