import numpy as np


def counts(x: "i32[8]"):
    c = x.copy()
    c[:4] += 0.5
    return c
