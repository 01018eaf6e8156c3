"""The `ollie` executable this package drives: where it is, and running one command of it.

Every command runs in a child process: the search itself runs each candidate kernel in a
child of that child, never inside Python. Errors come back as the exceptions of `_errors`,
built from the JSON object the executable writes with `--error-json`.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading

from ._errors import OllieError, SpecError, UsageError


def executable():
    """The path of the `ollie` executable: `$OLLIE_EXE`, else the one installed with this
    package (its scripts directory), else the first on `PATH`."""
    override = os.environ.get("OLLIE_EXE")
    if override:
        return override
    schemes = [sysconfig.get_default_scheme()]
    if hasattr(sysconfig, "get_preferred_scheme"):
        schemes.append(sysconfig.get_preferred_scheme("user"))
    for scheme in schemes:
        try:
            candidate = os.path.join(sysconfig.get_path("scripts", scheme), "ollie")
        except KeyError:
            continue
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("ollie")
    if found:
        return found
    raise OllieError("the `ollie` executable was not found beside this package nor on PATH: reinstall the package (`pip install .` in ollie's checkout) or set OLLIE_EXE")


def run(args, *, stream=False):
    """Runs `ollie ARGS...`; returns its stdout (see `call`)."""
    code, stdout = call(args, stream=stream)
    if code != 0:
        raise OllieError(f"`ollie {' '.join(map(str, args))}` exited with status {code}")
    return stdout


def call(args, *, stream=False):
    """Runs `ollie ARGS...`; returns its exit status (0, or 1 where `check` rejects) and its
    stdout. `stream` shows its stderr (the progress of a
    search) as it comes: on the terminal itself when Python's stderr is one, else line by line
    through `sys.stderr` (a notebook shows it there). Ctrl-C is passed on once (the search
    stops after the evaluation in flight and writes its outputs), a second time makes it quit.
    A failure raises `SpecError`, `UsageError` or `OllieError`."""
    with tempfile.TemporaryDirectory(prefix="ollie-py-") as tmp:
        error_json = os.path.join(tmp, "error.json")
        command = [executable(), *map(str, args), "--error-json", error_json]
        terminal = stream and _is_terminal(sys.stderr)
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=None if terminal else subprocess.PIPE,
            start_new_session=True,
            text=True,
        )
        captured = []
        reader = threading.Thread(target=_forward, args=(child.stderr, captured, stream), daemon=True) if child.stderr else None
        if reader:
            reader.start()
        stdout = _wait(child)
        if reader:
            reader.join()
        if child.returncode in (0, 1):
            return child.returncode, stdout
        raise _error(child.returncode, error_json, "".join(captured), command)


def _wait(child):
    """The child's stdout once it exits; Ctrl-C forwarded as SIGINT (twice: it quits)."""
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(child.stdout.read()), daemon=True)
    reader.start()
    interrupts = 0
    while True:
        try:
            child.wait()
            break
        except KeyboardInterrupt:
            interrupts += 1
            child.send_signal(signal.SIGINT)
            if interrupts >= 2:
                child.wait()
                raise
    reader.join()
    return "".join(chunks)


# A progress line ollie prints where its stderr is no terminal: `  12s of 60s: ...`.
_PROGRESS = re.compile(r"^\s*\d+s of \d+s: ")


def _forward(stream, captured, show):
    """Copies the child's stderr to `sys.stderr`; in a notebook the progress lines update one
    display in place (a status line, as the terminal's bar), the others are printed."""
    display = _notebook_display() if show else None
    for line in stream:
        captured.append(line)
        if not show:
            continue
        if display is not None and _PROGRESS.match(line):
            display.update({"text/plain": "ollie: " + line.strip()}, raw=True)
        else:
            sys.stderr.write(line)
            sys.stderr.flush()


def _notebook_display():
    """A display handle when running in a Jupyter kernel, else None."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is None:
            return None
        return display({"text/plain": "ollie: starting"}, raw=True, display_id=True)
    except Exception:
        return None


def _is_terminal(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _error(code, error_json, stderr, command):
    try:
        with open(error_json) as f:
            error = json.load(f)
    except (OSError, ValueError):
        error = None
    if error is None:
        return OllieError(f"`{' '.join(command)}` failed with exit status {code}:\n{stderr}")
    kind, message = error.get("error"), error.get("message", "")
    if kind == "spec":
        return SpecError(error.get("code"), message)
    if kind == "usage":
        return UsageError(message)
    return OllieError(message)
