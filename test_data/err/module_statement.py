import numpy as np

print("loading")


def f(x: "f32[4]"):
    return x
