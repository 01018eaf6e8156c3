import numpy as np

SCALE = 0.125


def dtypes(x: "f32[3, 4]", y: "f64[4]") -> ("f32[3, 4]", "f64[3, 4]"):
    a = x.astype(np.float32) * np.float32(SCALE)
    b = x.astype(np.float64) + y
    return a, b
