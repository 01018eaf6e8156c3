def f(x: "f32[4]"):
    return np.exp(x)
