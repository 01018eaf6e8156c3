from numpy import exp


def f(x: "f32[4]"):
    return exp(x)
