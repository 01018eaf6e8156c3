"""Differential fuzzing of the spec front end against real numpy (a developer tool, not a test).

usage: python3 tools/fuzz_numpy.py SEED COUNT [--rejects]

Mutates the bodies of the specs in test_data/corpus/ and examples/ (numbers changed, views and
reductions appended to names), and for every mutant that `ollie graph` accepts, runs `ollie eval
--f64` and numpy (crates/ollie/tests/numpy_oracle.py) on the same random inputs. It prints every
mutant that numpy rejects while ollie accepts it, or where the two disagree beyond 1e-12 relative
(ill-conditioned mutants, such as a variance that cancels to ~0, can exceed that honestly).
With --rejects it also prints mutants that ollie rejects but numpy runs (ollie is deliberately
stricter about return annotations and in-place aliasing). Build first: `cargo build -p ollie`.
"""
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

random.seed(int(sys.argv[1]))
N = int(sys.argv[2])
REPL = ["0", "-1", "1", "2", "3", "-2", "None", "x", "axis=0", "axis=-1", "keepdims=True", ".T", ".sum()", "[0]", "[None]", "[:, None]", "[::-1]", "[1:]", "(1, 2)", "-np.inf", "np.float32(0)", "* 2", "+ 1", "@", "**", "np.exp", "np.abs", "-", "/", ".max(-1)", ".mean(0)"]
specs = sorted(glob.glob("test_data/corpus/*.py")) + sorted(glob.glob("examples/*.py"))
ollie = "./target/debug/ollie"
bad = 0; compiled = 0
for it in range(N):
    orig_path = random.choice(specs)
    src = open(orig_path).read()
    for _ in range(random.randint(1, 2)):
        lines = src.split("\n")
        idx = [i for i, l in enumerate(lines) if l.startswith("    ") and "def " not in l and '"""' not in l and not l.strip().startswith("#")]
        if not idx: break
        i = random.choice(idx)
        l = lines[i]
        kind = random.random()
        if kind < 0.35:
            ms = list(re.finditer(r"(?<![\w.])-?\d+(?![\w.])", l))
            if not ms: continue
            m = random.choice(ms)
            l = l[:m.start()] + str(random.randint(-3, 4)) + l[m.end():]
        else:
            ms = [m for m in re.finditer(r"\b[a-z_]\w*\b", l) if m.group() not in ("np", "return", "axis", "keepdims", "dtype", "k", "optimize") and not l[m.end():].startswith("(") and not l[m.end():].startswith("=") and (m.start() == 0 or l[m.start()-1] != ".")]
            if not ms: continue
            m = random.choice(ms)
            suffix = random.choice([".T", "[None]", "[::-1]", "[1:]", "[..., :2]", ".sum(0, keepdims=True)", ".max(-1, keepdims=True)", " * 2", "[:, None]", ".reshape(-1)", ".mean()", " ** 2", "[0]"])
            l = l[:m.end()] + suffix + l[m.end():]
        lines[i] = l
        src = "\n".join(lines)
    d = tempfile.mkdtemp()
    spec = os.path.join(d, "spec.py"); open(spec, "w").write(src)
    g = subprocess.run([ollie, "graph", spec], capture_output=True, text=True)
    if g.returncode == 1 or "panicked" in g.stderr:
        print("OLLIE CRASH", g.stderr[:2000]); print(src); bad += 1; continue
    if g.returncode != 0:
        if "--rejects" in sys.argv:
            og = subprocess.run([ollie, "graph", orig_path], capture_output=True, text=True)
            header = og.stdout.split("\n")[0]
            name = header.split()[1].split("(")[0]
            params = header[header.index("(")+1:header.rindex(")")]
            inp = os.path.join(d, "in"); os.makedirs(inp)
            rng = np.random.default_rng(it)
            for pn, shp in re.findall(r"(\w+): \w+\[([0-9,]*)\]", params):
                shape = tuple(int(s) for s in shp.split(",") if s)
                np.save(os.path.join(inp, pn + ".npy"), rng.standard_normal(shape))
            n = subprocess.run([sys.executable, "crates/ollie/tests/numpy_oracle.py", spec, name, inp, os.path.join(d, "n")], capture_output=True, text=True)
            if n.returncode == 0:
                code = g.stderr.strip().split("\n")[0]
                msg = [l for l in g.stderr.split("\n") if "×" in l]
                print("OLLIE REJECTS what numpy runs:", code, msg[:1]); print(src)
        shutil.rmtree(d); continue
    compiled += 1
    header = g.stdout.split("\n")[0]
    name = header.split()[1].split("(")[0]
    params = header[header.index("(")+1:header.rindex(")")]
    ps = re.findall(r"(\w+): \w+\[([0-9,]*)\]", params)
    rng = np.random.default_rng(it)
    inp = os.path.join(d, "in"); os.makedirs(inp)
    args = []
    total = 0
    for pn, shp in ps:
        shape = tuple(int(s) for s in shp.split(",") if s)
        total += int(np.prod(shape))
        np.save(os.path.join(inp, pn + ".npy"), rng.standard_normal(shape))
        args += ["--input", f"{pn}={os.path.join(inp, pn + '.npy')}"]
    if total > 3_000_000: shutil.rmtree(d); continue
    e = subprocess.run([ollie, "eval", spec, "--f64", "--out", os.path.join(d, "o")] + args, capture_output=True, text=True)
    if e.returncode != 0:
        print("OLLIE EVAL FAIL", e.stderr[:1000]); print(src); bad += 1; continue
    n = subprocess.run([sys.executable, "crates/ollie/tests/numpy_oracle.py", spec, name, inp, os.path.join(d, "n")], capture_output=True, text=True)
    if n.returncode != 0:
        msg = n.stderr.strip().split("\n")[-1]
        print("NUMPY REJECTS what ollie accepts:", msg); print(src); bad += 1; continue
    for f in sorted(os.listdir(os.path.join(d, "n"))):
        a = np.load(os.path.join(d, "o", f)); b = np.load(os.path.join(d, "n", f))
        if a.shape != b.shape:
            print("SHAPE", f, a.shape, b.shape); print(src); bad += 1; break
        fin = np.isfinite(b)
        if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(a[~fin & ~np.isnan(b)], b[~fin & ~np.isnan(b)]):
            print("NONFINITE MISMATCH", f); print(src); bad += 1; break
        scale = np.max(np.abs(b[fin])) if fin.any() else 0
        if fin.any() and np.max(np.abs(a[fin] - b[fin])) > 1e-12 * max(scale, 1e-300):
            print("VALUE", f, np.max(np.abs(a[fin] - b[fin])), scale); print(src); bad += 1; break
    shutil.rmtree(d)
print("compiled", compiled, "bad", bad)
