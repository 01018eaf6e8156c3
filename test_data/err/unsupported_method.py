import numpy as np


def partition(x: "f32[4, 8]"):
    return x.argpartition(2, axis=-1)
