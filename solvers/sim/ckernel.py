"""The C step loop of the xoshiro generators (csrc/sgd_rows.c): built on first use, then cached.

``kernel()`` returns a ``CKernel`` or None.  It runs generators "xoshiro" and "float32" with
the row layout (K < 32); None means the numba kernels run instead (same stream, same
trajectory up to rounding): when ``SCALING_ODES_NO_CKERNEL=1``, when no C compiler
is found, or when compiling fails (a one-line warning says why, once per process).

The shared library is compiled with the host's C compiler (``$CC`` or ``cc``) at -O3 for this
CPU and kept under ``$SCALING_ODES_CACHE`` (default ``~/.cache/scaling-odes``) in
``ckernel/<hash>.so``; the hash covers the source, the compiler command and the CPU model and
flags, so a changed file, compiler or machine gets a fresh build.  It is published like every
generated artifact (solvers.core.artifacts): one process compiles while concurrent first uses
(pytest workers, sweep processes) wait, and the library is loaded under a temporary name before
it is renamed into place, so one that does not load is never cached.  Importing this module
does not import numba: the ``simulate`` command on this path starts in about 0.3 s instead of
1.2 s.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np

from solvers.core.artifacts import CKERNEL, forget, remembered
from solvers.generated import normal_f32 as _T
from solvers.sim import streams as _Z

SOURCE = Path(__file__).with_name("csrc") / "sgd_rows.c"
# -ffp-contract=off: only the explicit fused multiply-adds of the source are fused, so the
# normals are those of the numba kernel bit for bit (tests/test_ckernel.py).
CFLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-fno-strict-aliasing",
          "-pthread", "-shared", "-fPIC")

COMPILE_TIMEOUT_S = 120

_P = np.array([np.float32(c) for c in _T.CENTRAL_P], dtype=np.float32)
_Q = np.array([np.float32(c) for c in _T.CENTRAL_Q], dtype=np.float32)
_G = np.array(_T.TAIL_G, dtype=np.float64)
GEN_CODE = {"xoshiro": 1, "float32": 2}     # csrc/sgd_rows.c's GEN_ZIG, GEN_F32

_c_void_p, _i64 = ctypes.c_void_p, ctypes.c_int64


def _ptr(a):
    return a.ctypes.data


def aligned(a, align=64):
    """A C-contiguous copy of ``a`` whose data start on a multiple of ``align`` bytes.  NumPy's
    arrays start 16 bytes past a cache line here; the kernel's 64-byte loads and stores then
    each touch two lines, and with two threads (each writing its part: runs of 8 coordinates,
    csrc/sgd_rows.c) the lines at the ends of every run would be written by both.  Measured
    at N = 1024, K = M = 2 with the kernel before the split by lanes, aligned / 16 bytes off,
    steps per second: xoshiro 1.1x on one thread and on two, float32 1.0x (its step is not
    bound by memory accesses)."""
    a = np.asarray(a)
    out = aligned_empty(a.shape, a.dtype, align)
    out[...] = a
    return out


def aligned_empty(shape, dtype, align=64):
    """An uninitialised C-contiguous array whose data start on a multiple of ``align`` bytes
    (its pages are not touched: what a run does not use costs no memory)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buf = np.empty(nbytes + align, dtype=np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + nbytes].view(dtype).reshape(shape)


class CKernel:
    """ctypes front of the compiled library; arrays must be C-contiguous of the right dtype."""

    def __init__(self, lib):
        self._lib = lib
        p, i64, f64 = _c_void_p, _i64, ctypes.c_double
        for name, res, args in (
                ("sgd_init", ctypes.c_int, [p, p, ctypes.c_int, p, ctypes.c_int, ctypes.c_uint32,
                                            f64, f64,
                                            p, p, p, p, p, f64]),
                ("sgd_fill", None, [ctypes.c_int, p, p, p, i64, p]),
                ("sgd_draw_only", None, [ctypes.c_int, p, p, p, i64, i64, p]),
                ("sgd_transform_f32", None, [p, p, i64]),
                ("sgd_work_size", i64, [i64, i64, i64]),
                ("sgd_rows", i64, [ctypes.c_int, ctypes.c_int, p, p, p, p, i64, i64, i64, i64,
                                   f64, ctypes.c_int, i64, p, p, p, p,
                                   ctypes.POINTER(ctypes.c_double)])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        tables = [np.ascontiguousarray(t) for t in (_Z._KI, _Z._WS, _Z._X, _Z._RATIO, _Z._F)]
        if lib.sgd_init(_ptr(_P), _ptr(_Q), len(_P), _ptr(_G), len(_G), int(_T.M_TAIL) << 9,
                        _T.TAIL_CENTER, 1.0 / _T.TAIL_HALF_WIDTH, *map(_ptr, tables), _Z._R):
            raise RuntimeError("the float32 tables do not fit the C kernel (central degree "
                               "CDEG, at most 32 tail coefficients)")

    def fill(self, generator, state, scale, z):
        """z[:] = scale * next len(z) normals of the stream ``generator`` ("xoshiro" or
        "float32"), as normals.fill_normals / fill_normals_f32 draw them."""
        _check(state, np.uint64)
        _check(scale, np.float64, len(z))
        _check(z, np.float64)
        recs = np.empty(self._lib.sgd_work_size(len(z), 0, 0), dtype=np.uint64)
        self._lib.sgd_fill(GEN_CODE[generator], _ptr(state), _ptr(scale), _ptr(z), len(z),
                           _ptr(recs))

    def draw_only(self, generator, state, scale, z, reps):
        """``reps`` samples drawn into z and nothing else (the benchmark's floor)."""
        _check(state, np.uint64)
        _check(scale, np.float64, len(z))
        _check(z, np.float64)
        recs = np.empty(self._lib.sgd_work_size(len(z), 0, 0), dtype=np.uint64)
        self._lib.sgd_draw_only(GEN_CODE[generator], _ptr(state), _ptr(scale), _ptr(z), len(z),
                                reps, _ptr(recs))

    def transform(self, h, z):
        """z[a] = normal(h[a]) for 32-bit words h (no scale): the float32 transform."""
        _check(h, np.uint32)
        _check(z, np.float64, len(h))
        self._lib.sgd_transform_f32(_ptr(h), _ptr(z), len(h))

    def work(self, N, K, M):
        """The step loop's work space: the ring of samples drawn ahead and the lists of flagged
        words (about 18 N words, most of them touched only by the ziggurat)."""
        return aligned_empty(self._lib.sgd_work_size(N, K, M), np.float64)

    def steps(self, generator, state, J, B, scale, n_tr, eta, act, n_steps, z, x, y, work,
              threads=1):
        """As kernels._steps for the row layout, on 1 or 2 threads (the same bits either way:
        each thread does the part of every sample its 8 lanes draw, and one thread sums the
        two parts apart too); returns (-1 or the step at which a field became non-finite, the
        second thread's CPU seconds).  The arrays are used as they are (simulate checks them
        once); ``work`` is :meth:`work`'s (the ring of samples drawn ahead)."""
        K, N = J.shape
        M = B.shape[0]
        cpu = ctypes.c_double(0.0)
        r = self._lib.sgd_rows(GEN_CODE[generator], threads, _ptr(state), _ptr(J), _ptr(B),
                               _ptr(scale), N, n_tr, K, M, eta, act, n_steps, _ptr(z),
                               _ptr(x), _ptr(y), _ptr(work), ctypes.byref(cpu))
        if r == -2:
            raise MemoryError("the C step kernel could not allocate its work space")
        return r, cpu.value


def _check(a, dtype, n=None):
    if a.dtype != dtype or not a.flags.c_contiguous or (n is not None and a.shape[0] < n):
        raise ValueError(f"C kernel argument: need a C-contiguous {np.dtype(dtype)} array"
                         + (f" of >= {n} entries" if n is not None else "")
                         + f", got {a.dtype} {a.shape}")


def _compiler():
    cc = os.environ.get("CC", "cc")
    return shutil.which(cc)


def _cpu_id() -> bytes:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform
        return platform.processor().encode() + platform.machine().encode()
    keep = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))]
    return "\n".join(sorted(set(keep))).encode()


# Extra flags that build the source's other instruction-set paths on a CPU that has more
# (-march=native picks the widest one the CPU has): the default path of an AVX2-only CPU, and
# the plain C of one without AVX2.  Tests build each and check its normals bit for bit.
ISA_VARIANTS = {"native": (), "avx2": ("-mno-avx512f",),
                "plain": ("-mno-avx512f", "-mno-avx2", "-mno-fma")}


def library_path(cc: str, extra: tuple = ()) -> Path:
    h = hashlib.sha256()
    h.update(SOURCE.read_bytes())
    h.update(" ".join((cc, *CFLAGS, *extra)).encode())
    h.update(_cpu_id())
    return CKERNEL.path(f"sgd_rows-{h.hexdigest()[:16]}")


def build(cc: str, extra: tuple = ()) -> Path:
    """Compile the library into the cache (if not there yet); returns its path.  ``extra``
    flags follow CFLAGS (ISA_VARIANTS)."""

    def compile_to(tmp):
        try:   # 1-2 s normally; a compiler that hangs must not hang the simulator
            proc = subprocess.run([cc, *CFLAGS, *extra, "-o", tmp, str(SOURCE), "-lm"],
                                  capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise OSError(f"{cc} did not finish within {COMPILE_TIMEOUT_S} s") from None
        if proc.returncode:
            msg = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
            raise OSError(f"{cc} failed: {msg}")
    return CKERNEL.obtain(library_path(cc, extra).stem, compile_to, "C step kernel")


def kernel() -> CKernel | None:
    """The C kernel, or None (numba fallback); decided once per process and cache directory."""
    return remembered(("C kernel",), _decide)


def _decide() -> CKernel | None:
    k = None
    if os.environ.get("SCALING_ODES_NO_CKERNEL", "") in ("", "0"):
        cc = _compiler()
        try:
            if cc is None:
                raise OSError(f"no C compiler ({os.environ.get('CC', 'cc')!r} not found)")
            k = CKernel(ctypes.CDLL(str(build(cc, ISA_VARIANTS[_isa()]))))
        except (OSError, RuntimeError) as exc:
            warnings.warn(f"scaling-odes: the simulator uses its numba kernels (C kernel "
                          f"unavailable: {exc})", RuntimeWarning, stacklevel=3)
    return k


def _isa() -> str:
    """``SCALING_ODES_CKERNEL_ISA`` (native | avx2 | plain): build another instruction-set path
    than the CPU's widest, e.g. to measure what an AVX2-only CPU runs."""
    name = os.environ.get("SCALING_ODES_CKERNEL_ISA", "") or "native"
    if name not in ISA_VARIANTS:
        raise OSError(f"SCALING_ODES_CKERNEL_ISA = {name!r} is not one of "
                      f"{', '.join(ISA_VARIANTS)}")
    return name


def variant(name: str) -> CKernel:
    """The kernel built with ISA_VARIANTS[name] (not the process's kernel; tests); OSError if
    it cannot be built here."""
    cc = _compiler()
    if cc is None:
        raise OSError("no C compiler")
    return CKernel(ctypes.CDLL(str(build(cc, ISA_VARIANTS[name]))))


def reset():
    """Forget the decision of ``kernel()`` (tests)."""
    forget("C kernel")


@contextlib.contextmanager
def using(k: CKernel | None):
    """``kernel()`` is ``k`` inside (None: the numba kernels run, as without a compiler);
    decided afresh after (tests, benchmarks)."""
    reset()
    remembered(("C kernel",), lambda: k)
    try:
        yield
    finally:
        reset()


def numba_only():
    """``kernel()`` is None inside: :func:`using` (None)."""
    return using(None)
