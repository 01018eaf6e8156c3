//! Every rule of the library, tested two-sided: a graph where it applies is saturated with that
//! rule alone, and every graph extracted from the result is evaluated by the float64 reference
//! on random inputs, at several sizes (size 1 and odd sizes among them), against the original.
//! A rule valid only under a condition has a case just outside it, where it must not fire.

use ollie_graph::{evaluate, parse, Graph, Tensor};
use ollie_rewrite::{rewrite, rules, Limits};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A graph in text form with `{n}`, `{m}`, `{k}` and `{nm}` (n·m) for sizes; whether the rule
/// must fire on it, and whether it must at sizes all 1 when that differs (an axis of size 1 is
/// a broadcast axis too).
struct Case {
    rule: &'static str,
    graph: &'static str,
    fires: bool,
    at_ones: Option<bool>,
}

const SIZES: [(usize, usize, usize); 4] = [(1, 1, 1), (3, 5, 2), (7, 4, 9), (8, 8, 8)];

const CASES: &[Case] = &[
    Case {
        rule: "einsum-merge",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}], c: f32[{k},{n}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{k},{n}] = input[c]
  %3: f32[{n},{k}] = einsum[ij,jk->ik] %0, %1
  %4: f32[{n},{n}] = einsum[ik,kl->il] %3, %2
  return %4
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "einsum-split",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}], c: f32[{k},{n}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{k},{n}] = input[c]
  %3: f32[{n},{n}] = einsum[ij,jk,kl->il] %0, %1, %2
  return %3
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "einsum-presum",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{n}] = einsum[ij,jk->i] %0, %1
  return %2
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "einsum-transpose-operand",
        graph: "kernel k(a: f32[{m},{n}], b: f32[{m},{k}]) {
  %0: f32[{m},{n}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{n},{m}] = transpose[1,0] %0
  %3: f32[{n},{k}] = einsum[ij,jk->ik] %2, %1
  return %3
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "einsum-transpose-result",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{n},{k}] = einsum[ij,jk->ik] %0, %1
  %3: f32[{k},{n}] = transpose[1,0] %2
  return %3
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "contraction-scale-out",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[] = const[0.125]
  %3: f32[{n},{m}] = broadcast %2
  %4: f32[{n},{m}] = mul %0, %3
  %5: f32[{n},{k}] = einsum[ij,jk->ik] %4, %1
  return %5
}",
        fires: true,
        at_ones: None,
    },
    // A zero factor must stay where it is (an infinity times it is NaN, not zero).
    Case {
        rule: "contraction-scale-out",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[] = const[0.0]
  %3: f32[{n},{m}] = broadcast %2
  %4: f32[{n},{m}] = mul %3, %0
  %5: f32[{n},{k}] = einsum[ij,jk->ik] %4, %1
  return %5
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "contraction-scale-in",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{n},{k}] = einsum[ij,jk->ik] %0, %1
  %3: f32[] = const[3.0]
  %4: f32[{n},{k}] = broadcast %3
  %5: f32[{n},{k}] = div %2, %4
  return %5
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "contraction-scale-in",
        graph: "kernel k(a: f32[{n},{m}], b: f32[{m},{k}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[{m},{k}] = input[b]
  %2: f32[{n},{k}] = einsum[ij,jk->ik] %0, %1
  %3: f32[] = const[inf]
  %4: f32[{n},{k}] = broadcast %3
  %5: f32[{n},{k}] = div %2, %4
  return %5
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "sum-scale",
        graph: "kernel k(a: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[] = const[2.5]
  %2: f32[{n},{m}] = broadcast %1
  %3: f32[{n},{m}] = mul %2, %0
  %4: f32[{n}] = reduce_sum[1] %3
  return %4
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "sum-scale",
        graph: "kernel k(a: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[a]
  %1: f32[] = const[0.0]
  %2: f32[{n},{m}] = broadcast %1
  %3: f32[{n},{m}] = mul %2, %0
  %4: f32[{n}] = reduce_sum[1] %3
  return %4
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "sum-broadcast",
        graph: "kernel k(y: f32[{m}]) {
  %0: f32[{m}] = input[y]
  %1: f32[{n},{m}] = broadcast %0
  %2: f32[{m}] = reduce_sum[0] %1
  return %2
}",
        fires: true,
        at_ones: None,
    },
    // Summed along an axis the broadcast did not make: a real sum.
    Case {
        rule: "sum-broadcast",
        graph: "kernel k(y: f32[{m}]) {
  %0: f32[{m}] = input[y]
  %1: f32[{n},{m}] = broadcast %0
  %2: f32[{n}] = reduce_sum[1] %1
  return %2
}",
        fires: false,
        at_ones: Some(true),
    },
    // RMSNorm's division by each row's root mean square.
    Case {
        rule: "divide-by-reciprocal",
        graph: "kernel k(x: f32[{n},{m}], y: f32[{n}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n}] = input[y]
  %2: f32[{n}] = mul %1, %1
  %3: f32[] = const[0.5]
  %4: f32[{n}] = broadcast %3
  %5: f32[{n}] = add %2, %4
  %6: f32[{n}] = sqrt %5
  %7: f32[{n},1] = reshape %6
  %8: f32[{n},{m}] = broadcast %7
  %9: f32[{n},{m}] = div %0, %8
  return %9
}",
        fires: true,
        at_ones: Some(false),
    },
    Case {
        rule: "divide-by-reciprocal",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[] = const[3.0]
  %2: f32[{n},{m}] = broadcast %1
  %3: f32[{n},{m}] = div %0, %2
  return %3
}",
        fires: true,
        at_ones: Some(false),
    },
    // A divisor that may be subnormal (its reciprocal infinite) or one as large as the dividend.
    Case {
        rule: "divide-by-reciprocal",
        graph: "kernel k(x: f32[{n},{m}], y: f32[{n}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n}] = input[y]
  %2: f32[{n},1] = reshape %1
  %3: f32[{n},{m}] = broadcast %2
  %4: f32[{n},{m}] = div %0, %3
  %5: f32[] = const[1e-40]
  %6: f32[{n},{m}] = broadcast %5
  %7: f32[{n},{m}] = div %4, %6
  %8: f32[{n},{m}] = sqrt %0
  %9: f32[{n},{m}] = div %7, %8
  return %9
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "triangular-scan",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[] = const[1.0]
  %2: f32[{m},{m}] = broadcast %1
  %3: i64[{m},{m}] = iota[0]
  %4: i64[{m},{m}] = iota[1]
  %5: i64[] = const[0.0]
  %6: i64[{m},{m}] = broadcast %5
  %7: i64[{m},{m}] = add %3, %6
  %8: bool[{m},{m}] = ge %4, %7
  %9: f32[] = const[0.0]
  %10: f32[{m},{m}] = broadcast %9
  %11: f32[{m},{m}] = select %8, %2, %10
  %12: f32[{n},{m}] = einsum[ij,jk->ik] %0, %11
  return %12
}",
        fires: true,
        at_ones: None,
    },
    // A strict lower triangle on the left: an exclusive running sum down the columns.
    Case {
        rule: "triangular-scan",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: i64[{n},{n}] = iota[0]
  %2: i64[{n},{n}] = iota[1]
  %3: bool[{n},{n}] = gt %1, %2
  %4: f32[] = const[1.0]
  %5: f32[{n},{n}] = broadcast %4
  %6: f32[] = const[0.0]
  %7: f32[{n},{n}] = broadcast %6
  %8: f32[{n},{n}] = select %3, %5, %7
  %9: f32[{n},{m}] = einsum[ij,jk->ik] %8, %0
  return %9
}",
        fires: true,
        at_ones: None,
    },
    // Ones below the diagonal (select on the complement) to the right: a reversed running sum,
    // scaled by the triangle's value.
    Case {
        rule: "triangular-scan",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: i64[{m},{m}] = iota[0]
  %2: i64[{m},{m}] = iota[1]
  %3: bool[{m},{m}] = gt %2, %1
  %4: f32[] = const[0.0]
  %5: f32[{m},{m}] = broadcast %4
  %6: f32[] = const[0.5]
  %7: f32[{m},{m}] = broadcast %6
  %8: f32[{m},{m}] = select %3, %5, %7
  %9: f32[{m},{n}] = einsum[ij,jk->ki] %0, %8
  return %9
}",
        fires: true,
        at_ones: None,
    },
    // A band two off the diagonal is no running sum this rule knows.
    Case {
        rule: "triangular-scan",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: i64[{m},{m}] = iota[0]
  %2: i64[{m},{m}] = iota[1]
  %3: i64[] = const[2.0]
  %4: i64[{m},{m}] = broadcast %3
  %5: i64[{m},{m}] = add %1, %4
  %6: bool[{m},{m}] = ge %2, %5
  %7: f32[] = const[1.0]
  %8: f32[{m},{m}] = broadcast %7
  %9: f32[] = const[0.0]
  %10: f32[{m},{m}] = broadcast %9
  %11: f32[{m},{m}] = select %6, %8, %10
  %12: f32[{n},{m}] = einsum[ij,jk->ik] %0, %11
  return %12
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "diagonal-product",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: i64[{m},{m}] = iota[0]
  %2: i64[{m},{m}] = iota[1]
  %3: bool[{m},{m}] = eq %1, %2
  %4: f32[] = const[1.0]
  %5: f32[{m},{m}] = broadcast %4
  %6: f32[] = const[0.0]
  %7: f32[{m},{m}] = broadcast %6
  %8: f32[{m},{m}] = select %3, %5, %7
  %9: f32[{n},{m}] = einsum[ij,jk->ik] %0, %8
  return %9
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "diagonal-product",
        graph: "kernel k(x: f32[{n},{m}], v: f32[{m},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{m},{m}] = input[v]
  %2: i64[{m},{m}] = iota[0]
  %3: i64[{m},{m}] = iota[1]
  %4: bool[{m},{m}] = eq %2, %3
  %5: f32[] = const[0.0]
  %6: f32[{m},{m}] = broadcast %5
  %7: f32[{m},{m}] = select %4, %1, %6
  %8: f32[{n},{m}] = einsum[ij,kj->ki] %7, %0
  return %8
}",
        fires: true,
        at_ones: None,
    },
    // The superdiagonal is not a diagonal matrix.
    Case {
        rule: "diagonal-product",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: i64[{m},{m}] = iota[0]
  %2: i64[{m},{m}] = iota[1]
  %3: i64[] = const[1.0]
  %4: i64[{m},{m}] = broadcast %3
  %5: i64[{m},{m}] = add %1, %4
  %6: bool[{m},{m}] = eq %5, %2
  %7: f32[] = const[1.0]
  %8: f32[{m},{m}] = broadcast %7
  %9: f32[] = const[0.0]
  %10: f32[{m},{m}] = broadcast %9
  %11: f32[{m},{m}] = select %6, %8, %10
  %12: f32[{n},{m}] = einsum[ij,jk->ik] %0, %11
  return %12
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "online-normalizer",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n}] = reduce_max[1] %0
  %2: f32[{n},1] = reshape %1
  %3: f32[{n},{m}] = broadcast %2
  %4: f32[{n},{m}] = sub %0, %3
  %5: f32[{n},{m}] = exp %4
  %6: f32[{n}] = reduce_sum[1] %5
  %7: f32[{n},1] = reshape %6
  %8: f32[{n},{m}] = broadcast %7
  %9: f32[{n},{m}] = div %5, %8
  return %9
}",
        fires: true,
        at_ones: None,
    },
    // Over a leading axis, broadcast back without a reshape; two outputs (log-sum-exp too).
    Case {
        rule: "online-normalizer",
        graph: "kernel k(x: f32[{n},{m},{k}]) {
  %0: f32[{n},{m},{k}] = input[x]
  %1: f32[{m},{k}] = reduce_max[0] %0
  %2: f32[{n},{m},{k}] = broadcast %1
  %3: f32[{n},{m},{k}] = sub %0, %2
  %4: f32[{n},{m},{k}] = exp %3
  %5: f32[{m},{k}] = reduce_sum[0] %4
  %6: f32[{m},{k}] = log %5
  %7: f32[{m},{k}] = add %1, %6
  return %7, %5
}",
        fires: true,
        at_ones: None,
    },
    // The maximum over another axis than the sum's is no normalizer of it.
    Case {
        rule: "online-normalizer",
        graph: "kernel k(x: f32[{n},{n}]) {
  %0: f32[{n},{n}] = input[x]
  %1: f32[{n}] = reduce_max[0] %0
  %2: f32[{n},{n}] = broadcast %1
  %3: f32[{n},{n}] = sub %0, %2
  %4: f32[{n},{n}] = exp %3
  %5: f32[{n}] = reduce_sum[1] %4
  return %5
}",
        fires: false,
        at_ones: Some(false),
    },
    // Attention's values past a private cache (4 MiB): chunks of the positions.
    Case {
        rule: "softmax-contraction-chunks",
        graph: "kernel k(q: f32[{n},64], k: f32[16384,64], v: f32[16384,64]) {
  %0: f32[{n},64] = input[q]
  %1: f32[16384,64] = input[k]
  %2: f32[16384,64] = input[v]
  %3: f32[{n},16384] = einsum[hd,td->ht] %0, %1
  %4: f32[{n}] = reduce_max[1] %3
  %5: f32[{n},1] = reshape %4
  %6: f32[{n},16384] = broadcast %5
  %7: f32[{n},16384] = sub %3, %6
  %8: f32[{n},16384] = exp %7
  %9: f32[{n}] = reduce_sum[1] %8
  %10: f32[{n},1] = reshape %9
  %11: f32[{n},16384] = broadcast %10
  %12: f32[{n},16384] = div %8, %11
  %13: f32[{n},64] = einsum[ht,td->hd] %12, %2
  return %13
}",
        fires: true,
        at_ones: None,
    },
    // Values that fit a private cache are left whole.
    Case {
        rule: "softmax-contraction-chunks",
        graph: "kernel k(q: f32[{n},64], k: f32[1024,64], v: f32[1024,64]) {
  %0: f32[{n},64] = input[q]
  %1: f32[1024,64] = input[k]
  %2: f32[1024,64] = input[v]
  %3: f32[{n},1024] = einsum[hd,td->ht] %0, %1
  %4: f32[{n}] = reduce_max[1] %3
  %5: f32[{n},1] = reshape %4
  %6: f32[{n},1024] = broadcast %5
  %7: f32[{n},1024] = sub %3, %6
  %8: f32[{n},1024] = exp %7
  %9: f32[{n}] = reduce_sum[1] %8
  %10: f32[{n},1] = reshape %9
  %11: f32[{n},1024] = broadcast %10
  %12: f32[{n},1024] = div %8, %11
  %13: f32[{n},64] = einsum[ht,td->hd] %12, %2
  return %13
}",
        fires: false,
        at_ones: None,
    },
    // np.var's form: the deviation times itself, over the last axis.
    Case {
        rule: "one-pass-variance",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n}] = reduce_sum[1] %0
  %2: f32[] = const[{m}.0]
  %3: f32[{n}] = broadcast %2
  %4: f32[{n}] = div %1, %3
  %5: f32[{n},1] = reshape %4
  %6: f32[{n},{m}] = broadcast %5
  %7: f32[{n},{m}] = sub %0, %6
  %8: f32[{n},{m}] = mul %7, %7
  %9: f32[{n}] = reduce_sum[1] %8
  %10: f32[{n}] = div %9, %3
  return %10, %4
}",
        fires: true,
        at_ones: None,
    },
    // A layer norm's form: the deviation squared by `**`, over two leading axes.
    Case {
        rule: "one-pass-variance",
        graph: "kernel k(x: f32[{n},{m},{k}]) {
  %0: f32[{n},{m},{k}] = input[x]
  %1: f32[{k}] = reduce_sum[0,1] %0
  %2: f32[] = const[{nm}.0]
  %3: f32[{k}] = broadcast %2
  %4: f32[{k}] = div %1, %3
  %5: f32[{n},{m},{k}] = broadcast %4
  %6: f32[{n},{m},{k}] = sub %0, %5
  %7: f32[] = const[2.0]
  %8: f32[{n},{m},{k}] = broadcast %7
  %9: f32[{n},{m},{k}] = pow %6, %8
  %10: f32[{k}] = reduce_sum[0,1] %9
  return %10
}",
        fires: true,
        at_ones: None,
    },
    // Divided by one less than the count, the subtracted value is no mean.
    Case {
        rule: "one-pass-variance",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n}] = reduce_sum[1] %0
  %2: f32[] = const[{k}.5]
  %3: f32[{n}] = broadcast %2
  %4: f32[{n}] = div %1, %3
  %5: f32[{n},1] = reshape %4
  %6: f32[{n},{m}] = broadcast %5
  %7: f32[{n},{m}] = sub %0, %6
  %8: f32[{n},{m}] = mul %7, %7
  %9: f32[{n}] = reduce_sum[1] %8
  return %9
}",
        fires: false,
        at_ones: None,
    },
    Case {
        rule: "transpose-transpose",
        graph: "kernel k(x: f32[{n},{m},{k}]) {
  %0: f32[{n},{m},{k}] = input[x]
  %1: f32[{m},{k},{n}] = transpose[1,2,0] %0
  %2: f32[{k},{m},{n}] = transpose[1,0,2] %1
  %3: f32[{n},{m},{k}] = transpose[2,1,0] %2
  %4: f32[{n},{m},{k}] = exp %3
  return %4
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "reshape-reshape",
        graph: "kernel k(x: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{nm}] = reshape %0
  %2: f32[{m},{n}] = reshape %1
  %3: f32[{m},{n}] = exp %2
  return %3
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "transpose-elementwise",
        graph: "kernel k(x: f32[{n},{m}], y: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n},{m}] = input[y]
  %2: f32[{n},{m}] = mul %0, %1
  %3: f32[{m},{n}] = transpose[1,0] %2
  return %3
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "elementwise-transpose",
        graph: "kernel k(x: f32[{n},{m}], y: f32[{n},{m}]) {
  %0: f32[{n},{m}] = input[x]
  %1: f32[{n},{m}] = input[y]
  %2: f32[{m},{n}] = transpose[1,0] %0
  %3: f32[{m},{n}] = transpose[1,0] %1
  %4: f32[{m},{n}] = sub %2, %3
  return %4
}",
        fires: true,
        at_ones: None,
    },
    Case {
        rule: "elementwise-broadcast",
        graph: "kernel k(y: f32[{m}], z: f32[{n},1]) {
  %0: f32[{m}] = input[y]
  %1: f32[{n},1] = input[z]
  %2: f32[{k},{n},{m}] = broadcast %0
  %3: f32[{k},{n},{m}] = broadcast %1
  %4: f32[{k},{n},{m}] = add %2, %3
  %5: f32[{k},{n},{m}] = exp %4
  return %5
}",
        fires: true,
        at_ones: Some(false),
    },
];

fn instantiate(template: &str, (n, m, k): (usize, usize, usize)) -> Graph {
    let text = template.replace("{nm}", &(n * m).to_string()).replace("{n}", &n.to_string()).replace("{m}", &m.to_string()).replace("{k}", &k.to_string());
    parse(&format!("{text}\n")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn random_inputs(graph: &Graph, rng: &mut ChaCha8Rng) -> Vec<Tensor> {
    graph
        .params
        .iter()
        .map(|p| {
            let n = p.ty.num_elements();
            Tensor::from_shape_vec(p.ty.shape.clone(), (0..n).map(|_| rng.random_range(-2.0..2.0)).collect()).unwrap()
        })
        .collect()
}

/// Every case's rule, alone, on the case's graph at every size: whether it fired, and every
/// extracted graph equal to the original on random inputs.
#[test]
fn every_rule_preserves_values_where_it_fires_and_only_there() {
    let library = rules::all();
    let mut failures = Vec::new();
    for (c, case) in CASES.iter().enumerate() {
        let rule = library.iter().find(|r| r.name == case.rule).unwrap_or_else(|| panic!("no rule `{}`", case.rule));
        for sizes in SIZES {
            let graph = instantiate(case.graph, sizes);
            let limits = Limits { iterations: 4, ..Limits::default() };
            let result = rewrite(&graph, std::slice::from_ref(rule), &limits, 64);
            let fired = result.fired.iter().any(|(name, _)| *name == rule.name);
            let fires = if sizes == (1, 1, 1) { case.at_ones.unwrap_or(case.fires) } else { case.fires };
            if fired != fires {
                failures.push(format!("case {c} ({}) at {sizes:?}: fired {fired}, expected {fires}", case.rule));
                continue;
            }
            if fires && result.variants.is_empty() {
                failures.push(format!("case {c} ({}) at {sizes:?}: fired but no graph differs", case.rule));
            }
            let mut rng = ChaCha8Rng::seed_from_u64(c as u64);
            for _ in 0..3 {
                let inputs = random_inputs(&graph, &mut rng);
                let expected = evaluate(&graph, &inputs).unwrap();
                for v in &result.variants {
                    let got = evaluate(&v.graph, &inputs).unwrap();
                    for (e, g) in expected.iter().zip(&got) {
                        let scale = e.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                        let worst = e.iter().zip(g.iter()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                        let nan_apart = e.iter().zip(g.iter()).any(|(a, b)| a.is_nan() != b.is_nan());
                        if e.shape() != g.shape() || worst > 1e-9 * scale || nan_apart {
                            failures.push(format!("case {c} ({}) at {sizes:?}: off by {worst:e} in\n{}", case.rule, v.graph));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The table above covers the whole library: a rule added without a case fails here.
#[test]
fn every_rule_has_a_case_where_it_fires() {
    let missing: Vec<&str> = rules::all().iter().map(|r| r.name).filter(|name| !CASES.iter().any(|c| c.rule == *name && c.fires)).collect();
    assert!(missing.is_empty(), "rules without a case: {missing:?}");
}

/// Rule names are unique, and every rule states its identity.
#[test]
fn rules_are_named_once_and_documented() {
    let all = rules::all();
    for (i, r) in all.iter().enumerate() {
        assert!(!r.identity.is_empty(), "{} has no identity", r.name);
        assert!(all[..i].iter().all(|s| s.name != r.name), "{} twice", r.name);
    }
}

/// Weight absorption, as in MLA: `(q @ w1) @ (k @ w2).T` projects every key by `w2`; the
/// cheapest variant instead takes the query through both weights and meets the keys once.
#[test]
fn the_cheapest_variant_absorbs_the_key_projection_into_the_query() {
    let graph = parse(
        "kernel scores(q: f32[1,16], w1: f32[16,4], w2: f32[16,4], k: f32[64,16]) {
  %0: f32[1,16] = input[q]
  %1: f32[16,4] = input[w1]
  %2: f32[16,4] = input[w2]
  %3: f32[64,16] = input[k]
  %4: f32[1,4] = einsum[ij,jk->ik] %0, %1
  %5: f32[64,4] = einsum[ij,jk->ik] %3, %2
  %6: f32[4,64] = transpose[1,0] %5
  %7: f32[1,64] = einsum[ij,jk->ik] %4, %6
  return %7
}
",
    )
    .unwrap();
    let best = &ollie_rewrite::variants(&graph).variants[0].graph;
    let projected_keys = best.nodes.iter().any(|n| n.ty.shape == [64, 4] || n.ty.shape == [4, 64]);
    assert!(!projected_keys && best.work().flops < graph.work().flops / 3.0, "{best}");
}

/// A chain of seven 64 × 64 matrices and a vector, multiplied left to right: within the default
/// limits the cheapest variant is seven matrix-vector products, no matrix product left.
#[test]
fn a_long_chain_is_reordered_into_matrix_vector_products() {
    let mut text = String::from("kernel chain(");
    let names = ["a", "b", "c", "d", "e", "f", "g"];
    let params: Vec<String> = names.iter().map(|n| format!("{n}: f32[64,64]")).chain(["v: f32[64,1]".to_string()]).collect();
    text += &format!("{}) {{\n", params.join(", "));
    for (i, n) in names.iter().enumerate() {
        text += &format!("  %{i}: f32[64,64] = input[{n}]\n");
    }
    text += "  %7: f32[64,1] = input[v]\n  %8: f32[64,64] = einsum[ij,jk->ik] %0, %1\n";
    for i in 9..14 {
        text += &format!("  %{i}: f32[64,64] = einsum[ij,jk->ik] %{}, %{}\n", i - 1, i - 7);
    }
    text += "  %14: f32[64,1] = einsum[ij,jk->ik] %13, %7\n  return %14\n}\n";
    let graph = parse(&text).unwrap();
    let rewritten = ollie_rewrite::variants(&graph);
    let best = &rewritten.variants[0].graph;
    let products = best.nodes.iter().filter(|n| matches!(n.op, ollie_graph::Op::Einsum(_))).count();
    let matrix_products = best.nodes.iter().filter(|n| matches!(n.op, ollie_graph::Op::Einsum(_)) && n.ty.shape == [64, 64]).count();
    assert!(products == 7 && matrix_products == 0, "{} ({})\n{best}", rewritten.stop, rewritten.nodes);
}

/// A chunk whose scores are all −∞ (a masked stretch of the sequence) gives exponentials of 0,
/// as the whole softmax does there, not the NaN of −∞ − (−∞): the chunked form's maxima are
/// guarded.
#[test]
fn chunks_of_minus_infinity_drop_out_of_the_chunked_softmax() {
    let graph = parse(
        "kernel k(x: f32[2,16384], y: f32[2,16384], v: f32[16384,64]) {
  %0: f32[2,16384] = input[x]
  %1: f32[2,16384] = input[y]
  %2: f32[16384,64] = input[v]
  %3: f32[2,16384] = einsum[ht,ht->ht] %0, %1
  %4: f32[2] = reduce_max[1] %3
  %5: f32[2,1] = reshape %4
  %6: f32[2,16384] = broadcast %5
  %7: f32[2,16384] = sub %3, %6
  %8: f32[2,16384] = exp %7
  %9: f32[2] = reduce_sum[1] %8
  %10: f32[2,1] = reshape %9
  %11: f32[2,16384] = broadcast %10
  %12: f32[2,16384] = div %8, %11
  %13: f32[2,64] = einsum[ht,td->hd] %12, %2
  return %13
}
",
    )
    .unwrap();
    let rule = rules::all().into_iter().find(|r| r.name == "softmax-contraction-chunks").unwrap();
    let result = rewrite(&graph, &[rule], &Limits { iterations: 4, ..Limits::default() }, 64);
    assert!(!result.variants.is_empty(), "the rule did not fire");
    let mut inputs = random_inputs(&graph, &mut ChaCha8Rng::seed_from_u64(7));
    // The first row's first quarter (more than a chunk) is masked.
    inputs[0].as_slice_mut().unwrap()[..4096].fill(f64::NEG_INFINITY);
    inputs[1].fill(1.0);
    let expected = evaluate(&graph, &inputs).unwrap();
    assert!(expected[0].iter().all(|x| x.is_finite()));
    for v in &result.variants {
        let got = evaluate(&v.graph, &inputs).unwrap();
        let worst = expected[0].iter().zip(got[0].iter()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(got[0].iter().all(|x| x.is_finite()) && worst < 1e-9, "off by {worst:e} or not finite in\n{}", v.graph);
    }
}
