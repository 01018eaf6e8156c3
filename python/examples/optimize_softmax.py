"""ollie from Python: optimize examples/softmax.py's function and call the kernel it finds."""
import os
import sys

import numpy as np

import ollie

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from softmax import softmax  # noqa: E402  (a module-level function: its file is the spec)

k = ollie.optimize(softmax, time="30s")
x = np.random.default_rng(0).standard_normal((64, 4096), dtype=np.float32)
print(k)
print(f"max |kernel - numpy| = {np.abs(k(x) - softmax(x)).max():.3g}")
