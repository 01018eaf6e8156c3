import numpy as np

# One sweep of a 2-D Jacobi stencil: the mean of the four neighbours of every interior point.
N = 2048
I = N - 2


def jacobi2d(u: "f32[N, N]") -> "f32[I, I]":
    return 0.25 * (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1])
