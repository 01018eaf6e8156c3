import numpy as np


def broadcast_size1(a: "f32[4, 1, 5]", b: "f32[3, 1]", c: "f32[5]", d: "f32[]"):
    return a + b * c - d, (a - c) / (b + 3.0)
