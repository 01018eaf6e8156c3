import numpy as np

B = 8
T = 6
H = 32
activation = np.tanh


def elman_rnn(x: "f32[B, T, H]", w_ih: "f32[H, H]", w_hh: "f32[H, H]", h0: "f32[B, H]"):
    # A short recurrence unrolled over time, its states collected in a list and stacked.
    h = h0
    states = []
    for t in range(T):
        h = activation(x[:, t, :] @ w_ih + h @ w_hh)
        states.append(h)
    outputs = np.stack(states, axis=1)
    return outputs, h
