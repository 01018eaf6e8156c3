import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# ResNet-50's head: the global average pool, 2048 channels at 7×7, batch 8.
N, C, H, W = 8, 2048, 7, 7


def resnet_global_avgpool(x: "f32[N, C, H, W]") -> "f32[N, C]":
    return x.mean(axis=(2, 3))
