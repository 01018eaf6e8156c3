import numpy as np

D = 12


def scalar_params(x: "f32[D]", scale: "f32[]", bias: "f32"):
    y = x * scale + D // 5
    y += bias
    return y, scale * bias
