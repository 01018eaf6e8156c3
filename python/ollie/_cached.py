"""`@ollie.kernel`: a numpy function that runs the best kernel ollie has found for it.

The kernel cache is the executable's (`ollie kernels`): `ollie optimize` and `ollie.optimize`
store each result there, keyed by the spec's graph (its meaning at its dims and dtypes), this
CPU's features, the C compiler and ollie's version, so another CPU or an edited spec never
matches. A call that finds no kernel, or arrays the kernel does not take, runs the numpy
function itself.
"""
import functools
import json
import sys
import threading

from ._engine import run
from ._kernel import Kernel

_UNKNOWN = object()


class CachedFunction:
    """A spec function that calls the cached kernel when there is one. `.kernel` is that
    `Kernel` (or None), `.search(time)` searches now and uses the result, `.wait()` waits for a
    search started with `search=`."""

    def __init__(self, fn, search=None, dims=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._search_time = search
        self._dims = dims
        self._kernel = _UNKNOWN
        self._lock = threading.Lock()
        self._background = None

    @property
    def kernel(self):
        with self._lock:
            if self._kernel is _UNKNOWN:
                self._kernel = self._lookup()
                if self._kernel is None:
                    self._start_or_tell()
            return self._kernel

    def __call__(self, *args, **kwargs):
        k = self.kernel
        if k is not None and not kwargs and k.takes(args):
            return k(*args)
        return self._fn(*args, **kwargs)

    def search(self, time="60s", **options):
        """Runs `ollie.optimize` on the function now; later calls use what it stored."""
        from . import optimize

        optimize(self._fn, time=time, dims=self._dims, **options)
        with self._lock:
            self._kernel = self._lookup()
        return self._kernel

    def wait(self, timeout=None):
        """Waits for the background search `search=` started, if any; returns `.kernel`."""
        background = self._background
        if background is not None:
            background.join(timeout)
        return self.kernel

    def _lookup(self):
        from . import _spec

        entry = json.loads(run(["kernels", *_spec(self._fn, self._dims), "--json"]))
        return Kernel(entry["dir"]) if entry else None

    def _start_or_tell(self):
        name = self._fn.__name__
        if self._search_time is None:
            sys.stderr.write(
                f"ollie: no kernel found yet for `{name}` on this machine; running numpy. "
                f"Search with `{name}.search('10m')`, `ollie.optimize({name}, time='10m')`, or `@ollie.kernel(search='10m')`.\n"
            )
            return

        def background():
            from . import optimize

            try:
                optimize(self._fn, time=self._search_time, dims=self._dims, progress=False)
            except Exception as e:  # the numpy function keeps serving
                sys.stderr.write(f"ollie: the background search for `{name}` failed: {e}\n")
            found = self._lookup()
            with self._lock:
                self._kernel = found

        sys.stderr.write(f"ollie: searching for a kernel for `{name}` in the background ({self._search_time}); running numpy meanwhile.\n")
        self._background = threading.Thread(target=background, name=f"ollie-search-{name}", daemon=True)
        self._background.start()


def kernel(fn=None, *, search=None, dims=None):
    """Decorates a spec function (module-level, as `optimize` takes it): each call runs the
    best verified kernel found for it on this machine (from the kernel cache), and the numpy
    function when there is none or the arrays do not fit the kernel. Without a kernel it says
    once how to search; `search="10m"` starts a search in the background instead (its result is
    used once it is done). `dims` as in `optimize`."""
    if fn is None:
        return lambda f: CachedFunction(f, search=search, dims=dims)
    return CachedFunction(fn, search=search, dims=dims)
