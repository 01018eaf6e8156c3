import ml_dtypes
import numpy as np

V = 1000
D = 64
N = 40


def embedding_bf16(table: "bf16[V, D]", ids: "i32[N]") -> "bf16[N, D]":
    # A bfloat16 embedding table, scaled by sqrt(D) as transformers do, kept in bfloat16.
    rows = table[ids].astype(np.float32) * np.sqrt(D)
    return rows.astype(ml_dtypes.bfloat16)
