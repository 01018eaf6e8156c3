import numpy as np


def batch_matmul(a: "f32[2, 1, 4, 5]", b: "f32[3, 5, 6]") -> "f32[2, 3, 4, 6]":
    return a @ b
