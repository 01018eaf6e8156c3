import numpy as np

N = 256
D = 16


def hyperbolic_features(x: "f32[N, D]", y: "f32[N, D]") -> "f32[N, D]":
    # Hyperbolic-space features: a Lorentz-model distance (arccosh), arcsinh scaling of
    # heavy-tailed values, and tanh-bounded gates inverted by arctanh.
    ux = np.sinh(x * 0.5)
    uy = np.cosh(y * 0.5)
    inner = np.sqrt(1.0 + ux * ux) * uy
    dist = np.arccosh(np.maximum(inner, 1.0 + 1e-6))
    scaled = np.arcsinh(x * 100.0) / np.log(200.0)
    gate = np.arctanh(np.tanh(y) * 0.99)
    return dist + scaled + np.tan(0.1 * gate) + np.trunc(3.0 * x) + np.fix(-2.5 * y)
