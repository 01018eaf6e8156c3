import numpy as np


def transposed_relu(x: "f32[37, 48]", b: "f32[48]"):
    # a result stored transposed: read down x's columns, written along out's rows
    return np.maximum(x + b, 0.0).T
