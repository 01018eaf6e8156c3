"""The Python API against the installed package: the `ollie` executable built with it, real
searches and checks, real kernels called on numpy arrays."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ollie

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOFTMAX = os.path.join(ROOT, "examples", "softmax.py")
SMALL = {"B": 8, "N": 256}


def module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


softmax = module(SOFTMAX, "softmax_example").softmax


def test_the_executable_is_the_one_installed_with_this_package():
    exe = ollie.executable()
    assert os.path.dirname(exe) == os.path.dirname(sys.executable), exe
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
    assert version == ollie.__version__


def test_a_spec_outside_the_subset_raises_spec_error_with_its_code(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\n\n\ndef k(x: \"f32[4]\"):\n    return np.fft.fft(x)\n")
    with pytest.raises(ollie.SpecError) as e:
        ollie.graph(f"{bad}::k")
    assert e.value.code == "unsupported-call"
    assert "np.fft.fft" in e.value.rendered and "bad.py:5" in e.value.rendered
    # The same through the function itself.
    with pytest.raises(ollie.SpecError) as e:
        ollie.optimize(module(bad, "bad_spec").k, time="5s")
    assert e.value.code == "unsupported-call"


def test_usage_errors_are_value_errors():
    with pytest.raises(ollie.UsageError, match="NOPE"):
        ollie.graph(softmax, dims={"NOPE": 3})
    with pytest.raises(TypeError):
        ollie.graph(softmax, dims={"B": 2.5})

    def nested(x: "f32[4]"):
        return x

    with pytest.raises(ollie.UsageError, match="top level"):
        ollie.graph(nested)


def test_graph_lower_and_rewrite_of_a_function():
    assert ollie.graph(softmax, dims=SMALL).startswith("kernel softmax(x: f32[8,256])")
    c = ollie.lower(softmax, dims=SMALL)
    assert "void softmax(" in c
    assert "for i0 in 0..8 {" in ollie.lower(softmax, dims=SMALL, ir=True)
    assert "variant" in ollie.rewrite(softmax, dims=SMALL)


def test_check_accepts_the_naive_kernel_and_rejects_a_cheat_with_its_counterexample(tmp_path):
    naive = tmp_path / "naive.c"
    naive.write_text(ollie.lower(softmax, dims=SMALL))
    report = ollie.check(softmax, naive, dims=SMALL)
    assert report["accepted"] is True and report["certificate"]["tests"]
    # Each row divided by its sum without the maximum subtracted: overflows on large inputs.
    cheat = tmp_path / "cheat.c"
    cheat.write_text(textwrap.dedent("""
        #include <math.h>
        void softmax(const float *restrict x, float *restrict out) {
            for (int b = 0; b < 8; b++) {
                float s = 0.0f;
                for (int i = 0; i < 256; i++) s += expf(x[256 * b + i]);
                for (int i = 0; i < 256; i++) out[256 * b + i] = expf(x[256 * b + i]) / s;
            }
        }
    """))
    with pytest.raises(ollie.Rejected) as e:
        ollie.check(softmax, cheat, dims=SMALL)
    assert e.value.verdict == "inaccurate"
    assert e.value.report["accepted"] is False
    (name, x), = e.value.counterexample.items()
    assert name == "x" and x.shape == (8, 256) and x.dtype == np.float32


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    out = tmp_path_factory.mktemp("softmax-out")
    return ollie.optimize(softmax, time="10s", dims=SMALL, out=out, seed=7, progress=False)


def test_optimize_returns_a_kernel_that_computes_numpy_s_answer(found):
    x = np.random.default_rng(1).standard_normal((8, 256), dtype=np.float32)
    y = found(x)
    assert y.shape == (8, 256) and y.dtype == np.float32
    np.testing.assert_allclose(y, softmax(x), rtol=1e-5, atol=1e-7)
    assert found.speedup > 0 and found.seconds > 0 and 0 < found.fraction_of_roofline
    assert "void softmax(" in found.source
    assert found.certificate["accepted"] is True
    assert os.path.isfile(found.report_path)
    assert found.schedule is None or isinstance(found.schedule, str)


def test_a_kernel_writes_into_out_and_checks_its_arguments(found):
    x = np.random.default_rng(2).standard_normal((8, 256), dtype=np.float32)
    out = found.empty_outputs()
    assert found(x, out=out) is out
    np.testing.assert_allclose(out, softmax(x), rtol=1e-5, atol=1e-7)
    # A strided view is copied to the ABI's layout first.
    wide = np.random.default_rng(3).standard_normal((8, 512), dtype=np.float32)
    np.testing.assert_allclose(found(wide[:, ::2]), softmax(wide[:, ::2]), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"input `x`: expected shape \(8, 256\) \(f32\[8,256\]\), got shape \(4, 256\)"):
        found(x[:4])
    with pytest.raises(TypeError, match="got shape .8, 256. .float64."):
        found(x.astype(np.float64))
    with pytest.raises(TypeError, match="takes 1 arrays"):
        found(x, x)
    with pytest.raises(ValueError, match="aligned"):
        found(x, out=np.empty((8, 257), np.float32)[:, 1:])


def test_load_reads_back_what_optimize_wrote(found):
    again = ollie.load(found.directory)
    x = np.ones((8, 256), np.float32)
    np.testing.assert_array_equal(again(x), found(x))
    assert again.speedup == found.speedup


def test_ctrl_c_stops_the_search_and_returns_the_kernel_found_so_far(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(textwrap.dedent(f"""
        import importlib.util, signal, sys
        import ollie
        # As in an interactive session (a CI job's background shell starts it with SIGINT ignored).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        spec = importlib.util.spec_from_file_location("s", {SOFTMAX!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        k = ollie.optimize(m.softmax, time="120s", dims={SMALL!r}, out={str(tmp_path / "out")!r}, progress=True)
        print("speedup", k.speedup)
    """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait for the search's first progress line, then interrupt Python (alone: the search
    # runs in a session of its own, so Python must pass the signal on).
    start = time.monotonic()
    lines = []
    for line in child.stderr:
        lines.append(line)
        if " of 120s:" in line or time.monotonic() - start > 60:
            break
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=90)
    assert child.returncode == 0, "".join(lines) + stderr
    assert stdout.startswith("speedup"), stdout
    assert time.monotonic() - start < 100


DECORATED = '''
import numpy as np
import ollie

B = {B}
N = {N}


@ollie.kernel{options}
def softmax(x: "f32[B, N]") -> "f32[B, N]":
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)
'''


def decorated(tmp_path, name, B, N, options=""):
    path = tmp_path / f"{name}.py"
    path.write_text(DECORATED.format(B=B, N=N, options=options))
    return path, module(path, name).softmax


def forget(path):
    """Removes the cache entry of the spec at `path`, if there is one."""
    entry = json.loads(subprocess.run([ollie.executable(), "kernels", f"{path}::softmax", "--json"], capture_output=True, text=True, check=True).stdout)
    if entry:
        subprocess.run([ollie.executable(), "kernels", "--remove", entry["key"]], check=True, capture_output=True)


def test_optimize_stores_its_kernel_and_a_decorated_function_uses_it_in_a_new_process(found, tmp_path):
    assert not found.report["best"]["naive_is_best"], "the search found nothing faster than the naive kernel"
    entries = [e for e in ollie.kernels() if e["kernel"] == "softmax" and e["dims"] == [["B", 8], ["N", 256]]]
    assert entries and os.path.isfile(os.path.join(entries[0]["dir"], "libsoftmax.so"))
    # Another file whose function has the same meaning at the same sizes: the same entry (the
    # key is the graph, not the file).
    path, _ = decorated(tmp_path, "mine", 8, 256)
    script = tmp_path / "use.py"
    script.write_text(textwrap.dedent(f"""
        import importlib.util, json
        import numpy as np
        spec = importlib.util.spec_from_file_location("mine", {str(path)!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        x = np.random.default_rng(4).standard_normal((8, 256), dtype=np.float32)
        y = m.softmax(x)
        e = np.exp(x - x.max(axis=-1, keepdims=True)); want = e / e.sum(axis=-1, keepdims=True)
        print(json.dumps({{"dir": m.softmax.kernel.directory, "error": float(np.abs(y - want).max())}}))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["dir"] == entries[0]["dir"]
    assert result["error"] < 1e-6


def test_a_decorated_function_without_a_kernel_runs_numpy_and_says_how_to_search(tmp_path, capfd):
    path, f = decorated(tmp_path, "unsearched", 4, 128)
    forget(path)
    x = np.random.default_rng(5).standard_normal((4, 128), dtype=np.float32)
    np.testing.assert_array_equal(f(x), f.__wrapped__(x))
    f(x)
    assert f.kernel is None
    err = capfd.readouterr().err
    assert err.count("no kernel found yet for `softmax`") == 1, err
    # Arrays the spec does not describe go to numpy as well.
    assert f(np.ones((2, 3), np.float32)).shape == (2, 3)


def test_search_in_the_background_then_use_the_kernel(tmp_path, capfd):
    path, f = decorated(tmp_path, "background", 16, 256, options='(search="8s")')
    forget(path)
    x = np.random.default_rng(6).standard_normal((16, 256), dtype=np.float32)
    np.testing.assert_array_equal(f(x), f.__wrapped__(x))
    assert "in the background" in capfd.readouterr().err
    k = f.wait(timeout=120)
    assert k is not None, "the background search stored no kernel"
    np.testing.assert_allclose(f(x), f.__wrapped__(x), rtol=1e-5, atol=1e-7)
    forget(path)
    assert all(e["key"] != os.path.basename(k.directory) for e in ollie.kernels())


def test_in_a_notebook_the_progress_updates_one_display_in_place(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    # A Jupyter kernel of this very interpreter (JUPYTER_PATH is searched first).
    spec = tmp_path / "kernels" / "ollie-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "ollie test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(f"""
        import importlib.util, ollie
        spec = importlib.util.spec_from_file_location("s", {SOFTMAX!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        k = ollie.optimize(m.softmax, time="8s", dims={SMALL!r})
        print("speedup", k.speedup)
    """)))
    NotebookClient(nb, timeout=180, kernel_name="ollie-test").execute()
    outputs = nb.cells[0].outputs
    displays = [o for o in outputs if o["output_type"] == "display_data"]
    assert len(displays) == 1, outputs
    assert displays[0]["data"]["text/plain"].startswith("ollie: "), displays
    assert " of 8s: " in displays[0]["data"]["text/plain"]
    assert any(o["output_type"] == "stream" and o["text"].startswith("speedup") for o in outputs), outputs
