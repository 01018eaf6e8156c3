#!/usr/bin/env python3
"""Convolutions and pooling against what a user would run instead: every spec in
bench/convolutions/ (or those named), `ollie optimize --time T`, then one interleaved timing in
one process (bench/compare's) of ollie's kernel, the naive kernel, numpy running the spec, PyTorch's
own layer (`torch.nn.functional`: oneDNN's convolutions on CPU) and jax.jit of `jax.lax`'s
(`conv_general_dilated`, `reduce_window`) — the peers a user calls for these layers, since neither
framework takes `sliding_window_view`. Before timing, every peer's output is checked against
numpy's on the same inputs (a peer that disagrees is a mistake of this script and stops it), and
`ollie eval --f64` against numpy running the spec. Prints each kernel's share of its floor (FMA
or bandwidth) and its ratio to each peer; writes bench/convolutions/RESULTS.md. A benchmark,
not a test.

Usage: bench/convolutions/run.py [--time SECONDS] [--work DIR] [--reuse] [NAME ...]
"""
import argparse
import datetime
import glob
import importlib.machinery
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
compare = importlib.machinery.SourceFileLoader("compare", os.path.join(ROOT, "bench", "compare")).load_module()
np = compare.np

# What each spec computes, as the frameworks' layers take it: the kind, then stride, padding,
# dilation, groups (per spatial axis where they differ), and whether a bias and a ReLU follow.
CONV = "conv"
LAYERS = {
    "resnet_stem7x7": (CONV, dict(stride=2, padding=3)),
    "resnet_3x3_s1": (CONV, dict(padding=1)),
    "resnet_3x3_s2": (CONV, dict(stride=2, padding=1)),
    "resnet_3x3_c256": (CONV, dict(padding=1)),
    "resnet_1x1_expand": (CONV, dict()),
    "resnet_1x1_s2_down": (CONV, dict(stride=2)),
    "resnext_grouped3x3": (CONV, dict(padding=1, groups=32)),
    "deeplab_dilated3x3": (CONV, dict(padding=2, dilation=2)),
    "alexnet_5x5": (CONV, dict(padding=2, bias=True, relu=True)),
    "unet_3x3_c64": (CONV, dict(padding=1, bias=True, relu=True)),
    "vgg_3x3_c512": (CONV, dict(padding=1)),
    "convnext_pointwise": (CONV, dict()),
    "convnext_dw7x7": (CONV, dict(padding=3, depthwise=True)),
    "mobilenet_dw3x3_s2": (CONV, dict(stride=2, padding=1, depthwise=True)),
    "mobilenet_dw3x3": (CONV, dict(padding=1, depthwise=True)),
    "wav2vec_feature_conv": (CONV, dict(stride=5)),
    "wav2vec_conv_k3_s2": (CONV, dict(stride=2)),
    "tcn_dilated_k3": (CONV, dict(padding=4, dilation=4, bias=True, relu=True)),
    "speech_grouped_k5": (CONV, dict(padding=2, groups=4)),
    "text_cnn_k5": (CONV, dict(bias=True, relu=True)),
    "conformer_depthwise_k31": (CONV, dict(padding=15, depthwise=True)),
    "video_conv3d_3x3x3": (CONV, dict(padding=1)),
    "video_conv3d_temporal": (CONV, dict(padding=(1, 0, 0), weight=lambda w: w[..., None, None])),
    "conv_transpose1d_s2": ("transpose", dict(stride=2, padding=1)),
    "unet_transpose2x2": ("transpose", dict(stride=2)),
    "resnet_maxpool3x3_s2": ("max", dict(kernel=3, stride=2, padding=1)),
    "unet_maxpool2x2": ("max", dict(kernel=2, stride=2)),
    "maxpool1d_k3_s2": ("max", dict(kernel=3, stride=2, padding=1)),
    "maxpool3d_2x2x2": ("max", dict(kernel=2, stride=2)),
    "densenet_avgpool2x2": ("avg", dict(kernel=2, stride=2)),
    "inception_avgpool3x3": ("avg", dict(kernel=3, stride=1, padding=1)),
    "adaptive_avgpool_14to7": ("avg", dict(kernel=2, stride=2)),
    "avgpool1d_k4_s4": ("avg", dict(kernel=4, stride=4)),
    "resnet_global_avgpool": ("mean", dict()),
}


def spatial(x, d):
    """`x` (an int or a tuple) as a tuple of `d`."""
    return tuple(x) if isinstance(x, tuple) else (x,) * d


def torch_layer(kind, p, inputs):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    d = inputs[0].ndim - 2
    if kind == CONV:
        conv = (F.conv1d, F.conv2d, F.conv3d)[d - 1]
        weight = lambda w: torch.from_numpy(np.ascontiguousarray(p.get("weight", lambda w: w)(w.reshape(w.shape[0], 1, *w.shape[1:]) if p.get("depthwise") and w.ndim == d + 1 else w)))

        def call(xs):
            x, w = xs[0], xs[1]
            groups = x.shape[1] if p.get("depthwise") else p.get("groups", 1)
            y = conv(x, w, xs[2] if p.get("bias") else None, spatial(p.get("stride", 1), d), spatial(p.get("padding", 0), d), spatial(p.get("dilation", 1), d), groups)
            return F.relu(y) if p.get("relu") else y

        prepare = lambda xs: [torch.from_numpy(xs[0]), weight(xs[1])] + [torch.from_numpy(x) for x in xs[2:]]
        return prepare, lambda xs: torch.no_grad()(call)(xs)
    if kind == "transpose":
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[d - 1]
        call = lambda xs: conv(xs[0], xs[1], None, p.get("stride", 1), p.get("padding", 0))
    elif kind == "max":
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[d - 1]
        call = lambda xs: pool(xs[0], p["kernel"], p["stride"], p.get("padding", 0))
    elif kind == "avg":
        pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[d - 1]
        call = lambda xs: pool(xs[0], p["kernel"], p["stride"], p.get("padding", 0), count_include_pad=True)
    else:
        call = lambda xs: xs[0].mean(dim=tuple(range(2, xs[0].ndim)))
    return (lambda xs: [torch.from_numpy(x) for x in xs]), lambda xs: torch.no_grad()(call)(xs)


def jax_layer(kind, p, inputs):
    import jax
    import jax.numpy as jnp
    from jax import lax

    d = inputs[0].ndim - 2
    numbers = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}[d]
    pads = lambda: [(q, q) for q in spatial(p.get("padding", 0), d)]
    if kind == CONV:
        def f(x, w, *rest):
            if p.get("depthwise") and w.ndim == d + 1:
                w = w.reshape(w.shape[0], 1, *w.shape[1:])
            w = p.get("weight", lambda w: w)(w)
            groups = x.shape[1] if p.get("depthwise") else p.get("groups", 1)
            y = lax.conv_general_dilated(x, w, spatial(p.get("stride", 1), d), pads(), rhs_dilation=spatial(p.get("dilation", 1), d), dimension_numbers=numbers, feature_group_count=groups)
            if p.get("bias"):
                y = y + rest[0].reshape((1, -1) + (1,) * d)
            return jnp.maximum(y, 0.0) if p.get("relu") else y
    elif kind == "transpose":
        def f(x, w):
            # The gradient form: the input dilated by the stride, the kernel flipped and its
            # channels swapped, padded by K - 1 - P.
            k = w.shape[2:]
            w = jnp.flip(w, axis=tuple(range(2, 2 + d))).swapaxes(0, 1)
            q = spatial(p.get("padding", 0), d)
            return lax.conv_general_dilated(x, w, (1,) * d, [(kk - 1 - qq, kk - 1 - qq) for kk, qq in zip(k, q)], lhs_dilation=spatial(p["stride"], d), dimension_numbers=numbers)
    elif kind in ("max", "avg"):
        def f(x):
            window, strides = (1, 1) + spatial(p["kernel"], d), (1, 1) + spatial(p["stride"], d)
            padding = [(0, 0), (0, 0)] + pads()
            if kind == "max":
                return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, padding)
            return lax.reduce_window(x, 0.0, lax.add, window, strides, padding) / float(np.prod(window))
    else:
        def f(x):
            return x.mean(axis=tuple(range(2, x.ndim)))
    jf = jax.jit(f)

    def call(xs):
        return jax.block_until_ready(jf(*xs))

    return (lambda xs: [jax.device_put(jnp.asarray(x)) for x in xs]), call


def layer_peers(source, fname):
    """numpy running the spec, PyTorch's layer and jax.lax's under jax.jit, each checked against
    numpy on one input set."""
    f, params = spec_function(source, fname)
    out = {"numpy": (lambda xs: xs, lambda xs: f(*xs), None)}
    kind, p = LAYERS[fname]
    rng = np.random.default_rng(0)
    probe = [rng.standard_normal(shape, dtype=np.float32) for shape in params.values()]
    expected = np.asarray(f(*probe), dtype=np.float64)
    for label, build in (("pytorch", torch_layer), ("jax.jit", jax_layer)):
        try:
            prepare, call = build(kind, p, probe)
        except ImportError as e:
            out[label] = (None, None, f"{type(e).__name__}: {e}".splitlines()[0][:80])
            continue
        got = np.asarray(call(prepare(probe)), dtype=np.float64)
        scale = max(float(np.max(np.abs(expected))), 1e-30)
        if got.shape != expected.shape or float(np.max(np.abs(got - expected))) > 1e-4 * scale:
            sys.exit(f"{fname}: {label}'s layer disagrees with the spec (shape {got.shape} vs {expected.shape}): fix LAYERS")
        out[label] = (prepare, call, None)
    return out


def spec_function(source, fname):
    """The spec's function `fname` and its parameters' shapes, from their annotations evaluated
    with the module's constants."""
    import inspect

    module = {"__name__": "spec"}
    exec(compile(source, "spec", "exec"), module)
    f = module[fname]

    def shape(annotation):
        dims = annotation[annotation.index("[") + 1:annotation.rindex("]")]
        return tuple(int(eval(d, dict(module))) for d in dims.split(",") if d.strip())

    return f, {name: shape(p.annotation) for name, p in inspect.signature(f).parameters.items()}


def eval_equals_numpy(spec, fname, work):
    """`ollie eval --f64` on seeded inputs against numpy running the spec on the same ones."""
    f, params = spec_function(open(spec).read(), fname)
    rng = np.random.default_rng(2)
    args, xs = [], []
    for name, shape in params.items():
        x = rng.standard_normal(shape, dtype=np.float32)
        path = os.path.join(work, f"{fname}.{name}.npy")
        np.save(path, x)
        xs.append(x.astype(np.float64))
        args += ["--input", f"{name}={path}"]
    out = os.path.join(work, f"{fname}.eval")
    compare.run(compare.OLLIE, "eval", spec, "--f64", "--out", out, *args)
    got, expected = np.load(os.path.join(out, "out.npy")), np.asarray(f(*xs))
    return got.shape == expected.shape and float(np.max(np.abs(got - expected))) <= 1e-12 * max(float(np.max(np.abs(expected))), 1e-300)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="kernels to run (file names without .py); default all")
    p.add_argument("--time", type=float, default=60.0)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--block", type=int, default=3)
    p.add_argument("--work")
    p.add_argument("--reuse", action="store_true", help="time the kernels already in --work instead of searching again")
    p.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    a = p.parse_args()
    specs = sorted(s for s in glob.glob(os.path.join(HERE, "*.py")) if os.path.basename(s) != "run.py")
    specs = [s for s in specs if not a.names or os.path.basename(s)[:-3] in a.names]
    missing = [os.path.basename(s)[:-3] for s in specs if os.path.basename(s)[:-3] not in LAYERS]
    if missing:
        sys.exit(f"no layer for {', '.join(missing)} in LAYERS")
    compare.peers = layer_peers
    compare.run("cargo", "build", "--release", "-q", "-p", "ollie")
    m = compare.machine()
    work = a.work or tempfile.mkdtemp(prefix="ollie-convolutions-")
    os.makedirs(work, exist_ok=True)
    rows = []
    for spec in specs:
        stem = os.path.basename(spec)[:-3]
        equal = eval_equals_numpy(spec, stem, work)
        res = compare.search_and_bench(spec, work, a.time, a.reuse, a.rounds, a.block)
        r = res["rows"]
        row = {"name": stem, "equal": equal, "floor": r["ollie"]["floor"], "ollie_ms": r["ollie"]["median"] * 1e3, "evals": res["report"]["evaluations"], "skipped": res["skipped"]}
        for peer in ("numpy", "pytorch", "jax.jit"):
            row[peer] = r[peer]["median"] / r["ollie"]["median"] if peer in r else None
        rows.append(row)
        print(line(row), file=sys.stderr, flush=True)
        write(a, m, rows, len(specs))
    print(open(a.results).read())


def write(a, m, rows, planned):
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = [
        "# Convolutions and pooling",
        "",
        f"{date}; {m['cpu']} ({m['isa']}); 2 threads; ceilings measured by `ollie machine`: {m['bandwidth']} GB/s, {m['peak']} GFLOP/s. "
        f"`ollie optimize --time {a.time:.0f}s` per layer, then bench/compare's interleaved timing. Ratios: the peer's median over "
        "ollie's (above 1: ollie ahead). `eval`: `ollie eval --f64` equal to numpy running the spec. Command: `bench/convolutions/run.py"
        + (f" --time {a.time:.0f}" if a.time != 60 else "") + "`" + (f"; {len(rows)} of {planned} so far." if len(rows) < planned else "."),
        "",
        "| layer | eval | floor share | ollie ms | × numpy | × PyTorch | × jax.jit | evals |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    text += [line(r) for r in rows]
    shares = [r["floor"] for r in rows]
    count = lambda peer: (sum(1 for r in rows if r[peer] is not None and r[peer] > 1.0), sum(1 for r in rows if r[peer] is not None))
    text += ["", f"{len(rows)} layers: median share of the floor {100 * statistics.median(shares):.0f}%; "
             + "; ".join(f"ahead of {peer} on {count(peer)[0]} of {count(peer)[1]}" for peer in ("numpy", "pytorch", "jax.jit"))
             + f"; below a third of the floor: {', '.join(r['name'] for r in rows if r['floor'] < 1 / 3) or 'none'}."]
    skipped = {(k, v) for r in rows for k, v in r["skipped"].items()}
    if skipped:
        text += ["", "Peers not run: " + "; ".join(sorted(f"{k}: {v}" for k, v in skipped))]
    with open(a.results, "w") as f:
        f.write("\n".join(text) + "\n")


def line(r):
    ratio = lambda x: f"{x:.2f}" if x is not None else "–"
    return f"| {r['name']} | {'equal' if r['equal'] else 'DIFFERS'} | {100 * r['floor']:.0f}% | {r['ollie_ms']:.3f} | {ratio(r['numpy'])} | {ratio(r['pytorch'])} | {ratio(r['jax.jit'])} | {r['evals']} |"


if __name__ == "__main__":
    main()
