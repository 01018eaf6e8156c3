"""`Kernel`: a kernel ollie found, loaded from its output directory and called on numpy arrays."""
import ctypes
import json
import os

import numpy as np

# The kernel ABI's alignments (docs/abi.md): inputs 16 bytes, outputs 64 bytes.
INPUT_ALIGN = 16
OUTPUT_ALIGN = 64


def numpy_dtype(name):
    """The numpy dtype of one of ollie's dtype names (`f32`, `bf16`, `i64`, `bool`, ...)."""
    if name == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    dtypes = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64, "i32": np.int32, "i8": np.int8, "u8": np.uint8, "bool": np.bool_}
    return np.dtype(dtypes[name])


class _Array:
    """One array of the kernel's signature."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.shape = tuple(entry["shape"])
        self.spec = entry["dtype"]
        self.dtype = numpy_dtype(entry["dtype"])
        self.abi = numpy_dtype(entry["abi"])

    def describe(self):
        return f"{self.spec}[{','.join(map(str, self.shape))}]"


def _address(a):
    return a.__array_interface__["data"][0]


def _aligned(shape, dtype, align):
    """An uninitialized C-contiguous array whose data starts on an `align`-byte boundary."""
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(size + align, dtype=np.uint8)
    at = -_address(raw) % align
    return raw[at:at + size].view(dtype).reshape(shape)


class Kernel:
    """The kernel `ollie optimize` wrote to `directory`, callable on numpy arrays:
    `y = kernel(x, w)` checks each input's shape and dtype (the spec's), allocates the outputs
    (or writes into `out=`: an array, or a tuple of one per output, C-contiguous, 64-byte
    aligned, of the kernel's result dtypes) and returns them, a tuple when there are several.

    Attributes: `name`, `speedup` (over the naive kernel), `seconds` (the kernel's median time),
    `fraction_of_roofline` (the roofline floor's time over the kernel's), `source` (its C),
    `schedule`, `certificate` (what the final verification ran, a dict), `report` (report.json as
    a dict), `report_path` (report.md), `directory`."""

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        with open(os.path.join(self.directory, "report.json")) as f:
            self.report = json.load(f)
        self.name = self.report["kernel"]
        signature = self.report["signature"]
        self._inputs = [_Array(e) for e in signature["inputs"]]
        self._outputs = [_Array(e) for e in signature["outputs"]]
        best = self.report["best"]
        self.speedup = best["speedup"]
        self.seconds = best["best_seconds"]
        self.fraction_of_roofline = self.report["fraction_of_roofline"]
        self.schedule = best.get("schedule")
        with open(os.path.join(self.directory, f"{self.name}.c")) as f:
            self.source = f.read()
        with open(os.path.join(self.directory, "certificate.json")) as f:
            self.certificate = json.load(f)
        self.report_path = os.path.join(self.directory, "report.md")
        library = ctypes.CDLL(os.path.join(self.directory, f"lib{self.name}.so"))
        self._function = getattr(library, self.name)
        self._function.restype = None
        self._function.argtypes = [ctypes.c_void_p] * (len(self._inputs) + len(self._outputs))

    def __repr__(self):
        return f"<ollie.Kernel {self.name}: {self.speedup:.2f}x the naive kernel, {100 * self.fraction_of_roofline:.0f}% of the roofline, from {self.directory}>"

    def __call__(self, *arrays, out=None):
        if len(arrays) != len(self._inputs):
            names = ", ".join(a.name for a in self._inputs)
            raise TypeError(f"{self.name}() takes {len(self._inputs)} arrays ({names}), got {len(arrays)}")
        pointers = []
        copies = []
        for spec, a in zip(self._inputs, arrays):
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            if a.shape != spec.shape or a.dtype != spec.dtype:
                raise _mismatch(self.name, spec, a)
            address = _address(a)
            if address % INPUT_ALIGN or not a.flags.c_contiguous:
                a = _aligned(spec.shape, spec.abi, INPUT_ALIGN)
                a[...] = arrays[len(pointers)]
                copies.append(a)
                address = _address(a)
            pointers.append(address)
        outputs = self._outputs_for(out)
        pointers.extend(_address(o) for o in outputs)
        self._function(*pointers)
        if len(outputs) == 1:
            o, spec = outputs[0], self._outputs[0]
            return o if o.dtype == spec.dtype else o.astype(spec.dtype)
        return tuple(o if o.dtype == spec.dtype else o.astype(spec.dtype) for o, spec in zip(outputs, self._outputs))

    def takes(self, arrays):
        """Whether a call with `arrays` fits the kernel's signature (shapes and dtypes)."""
        if len(arrays) != len(self._inputs):
            return False
        for spec, value in zip(self._inputs, arrays):
            shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
            if shape != spec.shape or dtype != spec.dtype:
                return False
        return True

    def _outputs_for(self, out):
        if out is None:
            return [_aligned(spec.shape, spec.abi, OUTPUT_ALIGN) for spec in self._outputs]
        given = out if isinstance(out, tuple) else (out,)
        if len(given) != len(self._outputs):
            raise TypeError(f"{self.name}(): `out` must hold {len(self._outputs)} arrays, got {len(given)}")
        for spec, o in zip(self._outputs, given):
            if not isinstance(o, np.ndarray) or o.shape != spec.shape or o.dtype != spec.abi:
                raise ValueError(f"{self.name}(): `out` for `{spec.name}` must be a {spec.abi.name} array of shape {spec.shape}, got {_describe(o)}")
            if not o.flags.c_contiguous or not o.flags.writeable or _address(o) % OUTPUT_ALIGN:
                raise ValueError(f"{self.name}(): `out` for `{spec.name}` must be writeable, C-contiguous and {OUTPUT_ALIGN}-byte aligned (the kernel ABI's outputs); `kernel.empty_outputs()` makes them")
        return list(given)

    def empty_outputs(self):
        """Arrays the kernel can write into (`out=`), one per output."""
        outputs = tuple(_aligned(spec.shape, spec.abi, OUTPUT_ALIGN) for spec in self._outputs)
        return outputs[0] if len(outputs) == 1 else outputs


def _describe(a):
    if isinstance(a, np.ndarray):
        return f"shape {a.shape} ({a.dtype.name})"
    return type(a).__name__


def _mismatch(kernel, spec, a):
    message = f"{kernel}(): input `{spec.name}`: expected shape {spec.shape} ({spec.describe()}), got shape {a.shape} ({a.dtype.name})"
    return (ValueError if a.shape != spec.shape else TypeError)(message)
