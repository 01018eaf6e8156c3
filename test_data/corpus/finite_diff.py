import numpy as np

B = 4
L = 50


def velocity_accel(pos: "f32[B, L]"):
    # Finite differences of trajectories: velocity and acceleration along time.
    vel = np.diff(pos, axis=1)
    acc = np.diff(pos, n=2)
    return vel, acc
