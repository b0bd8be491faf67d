"""Finite-N online SGD of the soft committee machine: the ground truth for every ODE curve.

Model (docs/theory/conventions.md, binding)
-----------------------------
Inputs xi ~ N(0, Sigma) in R^N; Sigma has L distinct eigenvalues lambda_1 > ... > lambda_L, each
with multiplicity N/L.  Coordinate ``a`` of the eigenbasis belongs to eigen-block k = a // (N/L).
Student sigma = (sqrt(M)/K) sum_i g(x_i), x_i = J_i.xi/sqrt(N); teacher
zeta = (1/sqrt(M)) sum_n g(y_n), y_n = B_n.xi/sqrt(N); g(x) = erf(x/sqrt2) ("erf") or x ("linear").
One fresh sample per step:

    J_i <- J_i + eta (sqrt(M)/K) (zeta - sigma) g'(x_i) xi / sqrt(N),      alpha = steps / N.

Init J_ia ~ N(0, sigma_J^2), B_na ~ N(0, 1).  Level-1 order parameters R1 = J Sigma B^T/N,
Q1 = J Sigma J^T/N, T1 = B Sigma B^T/N; mode overlaps R_k = J P_k B^T/N (P_k = projector on
block k), so that R1 = sum_k lambda_k R_k (likewise Q, T).  eps_g is evaluated exactly from
(R1, Q1, T1).

The committee-machine family (solvers/sim/family.py) generalises this model: activations
g_s, g_t in erf / linear / relu / polynomials, readouts v, u (normalisations or explicit),
a trained readout, label noise, weight decay, B samples per step and a learning-rate schedule
(keyword arguments of ``simulate``; their defaults are the model above).  Those variants run on
the numba loop of family_kernels.py and in ``naive_simulate``; eps_g is then the clean error
from (R1, Q1, T1) with the pair's I2 and the current readout.  Initial weights (and
``init="informed"``) come from solvers/core/initial.py, which the ODE's random start shares.

Why everything runs in the eigenbasis
-------------------------------------
With Sigma = W diag(lambda) W^T, write xi = W z~ with z~ = sqrt(lambda) (.) z, z ~ N(0, I).  Then
J.xi = (J W).z~ and the update J <- J + c xi maps to J~ <- J~ + c z~ for J~ = J W (because
xi^T W = z~^T).  So SGD on rotated data is *exactly* SGD of J~ against the teacher B~ = B W on
diagonal data; the rotation only enters through the initial condition.  ``rotate=True`` therefore
draws J and B in the original basis, draws a Haar W from the seed, and trains J~ = J W: a user who
supplies J0, B0 (original basis) gets exactly the overlaps of their weights, and no step ever costs
O(N^2).  ``naive_simulate`` does the same computation the slow, literal way (xi = W z~ formed
explicitly), which is the independent check of this equivalence.

Trainable mask
--------------
``n_trainable = N_l`` makes only the first N_l eigen-directions (largest eigenvalues first, i.e.
eigenbasis coordinates a < N_l) trainable: the gradient is projected onto their span, so the
untrainable components of J~ never change.  Their initial value is a choice:
``untrainable="zero"`` (default) sets them to 0 at initialisation, so the student lives in the
N_l-dimensional feature space (in the rotated case J = J~ W^T has no component outside the span of
the first N_l eigenvectors); for the linear K = M = 1 student the averaged asymptote is then
(1/(2L)) sum_{k>N_l} lambda_k.  ``untrainable="frozen"`` keeps their random initial values: this
is the convention of the paper's feature-scaling section (4.3), whose averaged asymptote
(1+sigma_J^2)/(2L) sum_{k>N_l} lambda_k (Eq. 10) carries the sigma_J^2 of the frozen weights.  The
two differ by O(sigma_J^2) in eps_g.  (The paper's App. B.3.1 variant, a mask on the first N_l
*original* coordinates with rotated Sigma, is not this: it is not diagonal in the eigenbasis.)

Reproducibility
---------------
``np.random.SeedSequence(seed).spawn(5)`` gives independent streams, in this order, for the
teacher B, the student J, the rotation W, the training inputs and the held-out inputs.  So the
training trajectory does not depend on ``eps_holdout``, ``rotate`` does not change J or B, and
supplying J0 does not change the data; in particular the initial weights, hence the initial
order parameters (``initial_mode_overlaps``, which ``solve`` with init = "random" uses), do not
depend on ``generator``.  Training sample t consumes the t-th block of N normals of the input
stream.  Three streams, all seeded from child 3:

- ``generator="float32"`` (the default): 16 xoshiro256++ lanes, each 64-bit word split into two
  32-bit draws turned into normals by a float32 inverse CDF (``solvers/sim/normals.py``).  The
  fastest of the three that passes the checks of the other two: the statistical tests shared
  with the ziggurat (tests/test_normals.py), the transform's accuracy against erfinv on every
  input (tests/test_normals_f32.py: 5.4e-7 relative, |z| < 5.42, i.e. 6e-8 of a true normal's
  mass cut off), and the finite-size agreement with the ODEs (tests/test_sim_vs_ode.py: the
  discrepancy falls like N^-1/2 up to N = 8192, plateau escapes as with the ziggurat).  About
  1.5x the ziggurat's step rate at N = 1024, one thread, and more with two (BENCHMARKS.md).
- ``generator="xoshiro"``: the same lanes, one word per normal, ziggurat transform in float64
  (the default until the float32 stream had passed the same checks; keep it for float64 inputs).
- ``generator="numpy"``: the reference stream, a PCG64 Generator, drawn exactly as
  ``rng.standard_normal(N)`` would (numba implements NumPy's ziggurat bit for bit).

Each seed gives one fixed stream per generator, so a seed reproduces its run only together with
the generator (``result.config["generator"]``, the CLI's ``meta.generator``); runs made before
the default changed are reproduced with ``generator="xoshiro"``.  ``naive_simulate`` draws the
same stream as ``simulate`` for every choice.  Record points, chunking and the progress bar never
change the stream, hence the trajectory.  No reduction depends on threads or scheduling; the
kernels' dot products are vectorised (see ``kernels._dot_simd`` and csrc/sgd_rows.c), so their
order is fixed by the compiled code: the same seed gives a bit-identical trajectory on the same
machine with the same kernel, in this process or in a thread of ``simulate_many``.

Kernels
-------
The xoshiro generators with the row layout (K < _COLUMN_KERNEL_MIN_K) run a C kernel
(``solvers/sim/ckernel.py``, compiled on first use and cached), which draws, updates and sums
in one pass per step; everything else (the column layout, NumPy's stream, and any case when no
C compiler is found or ``SCALING_ODES_NO_CKERNEL=1``) runs the numba kernels
(``solvers/sim/kernels.py``, one step loop ``_steps`` for both layouts).  All of them draw the
same normals bit for bit; they sum the fields in different orders, so they agree to rounding
(tests/test_ckernel.py: 1e-13 relative over thousands of steps), and so do the two layouts.
Which kernel runs depends on K and on the machine, never on the record grid or on threads.
"""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from solvers.core import initial
from solvers.core.cpus import available_cpus   # public here too (the sizing model imports it)
from solvers.sim import family as fam
from solvers.sim.divergence import DivergenceCheck
from solvers.sim.streams import seed_state

__all__ = [
    "SimulationResult",
    "power_law_eigenvalues",
    "simulate",
    "simulate_many",
    "naive_simulate",
    "eps_g_from_order_parameters",
]

ACTIVATIONS = ("erf", "linear")
# Sources of the training inputs (module doc): "float32" (the default) and "xoshiro", two
# transforms of the xoshiro256++ lanes (solvers/sim/normals.py), or "numpy", the PCG64 stream of
# NumPy's Generator (the reference: bit-identical to rng.standard_normal).
GENERATORS = ("xoshiro", "numpy", "float32")
DEFAULT_GENERATOR = "float32"
_GEN_CODE = {"numpy": 0, "xoshiro": 1, "float32": 2}
# Largest number of SGD steps accepted: far beyond any run that can finish (10^12 steps are a few
# weeks at 10^6 steps/s), and well inside int64, where round(alpha N) would otherwise overflow.
MAX_STEPS = 10**12
_ACT_CODE = {"erf": 0, "linear": 1}
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
# Below this K the row kernel (vectorised dot products, J streamed once per step) is faster; from
# here on the fused column kernel, which vectorises across i, is level with it.  Measured with the
# xoshiro inputs on a 2-core AMD EPYC (Zen 4), steps per CPU-second, rows vs columns: N=1024
# K=4 222k vs 128k, K=8 127k vs 109k, K=16 83k vs 60k; N=512 K=40 51k vs 46k; N=256 K=40 110k vs
# 113k; N=7000 K=40 1430 vs 1520.  (The tests lower it to 8 to exercise both kernels cheaply.)
_COLUMN_KERNEL_MIN_K = 32
# From this N on, one run's steps take two threads when a second CPU is free (C kernel): below
# it the per-step exchange between the cores is not paid back.  Two threads / one, steps per
# second at K = M = 2: bench/ARCHIVE.md §13's table float32 1.20 (N = 256), 1.34 (1024), 1.73 (7000),
# xoshiro 0.99, 1.29, 1.32; interleaved in-process runs of the kernel that cut the coordinates in
# halves, 3 rounds each, float32 0.7-1.3 at 512, 1.2-1.5 at 1024, 1.3-1.6 at 2048; xoshiro,
# whose redraws of rejected words are serial across the two parts (one repair lane), 1.0-1.4 at
# 512, 1.0-1.3 at 1024.  The kernel that cuts the lanes instead (§50), float32 at N = 1024, at
# real-time priority (the machine was never idle): 1.2-1.8 in wall in-process; the whole command
# 0.64x one thread's wall for 1.13x its CPU.  Single rounds scatter (~15 %, and more on this
# machine); the probe of _ThreadChoice undoes a bad pick.
_TWO_THREAD_MIN_N = {"float32": 512, "xoshiro": 1024}
# Steps per kernel call: sets how often the progress bar moves (about 3.10^7 multiply-adds,
# ~10 ms on the C kernel: each call costs ~30 us of Python, 1 % of the command at 4x fewer
# multiply-adds) and, with two threads, how often the C kernel starts its second thread (a
# start costs ~0.2 ms, 7 % of a 3 ms call, measured on the whole command).
_CALL_WORK = 1 << 25
_CALL_WORK_TWO_THREADS = 1 << 26
# Held-out samples per batch, bounded in memory (about 8 MB of inputs).
_HOLDOUT_BATCH_WORDS = 1 << 20


@dataclass
class SimulationResult:
    """Outcome of one simulation.

    alpha        recorded alpha values: the grid actually hit, steps = round(alpha N), sorted and
                 de-duplicated
    eps_g        exact generalisation error from (R1, Q1, T1) at each alpha
    R1, Q1, T1   level-1 order parameters, shapes (n_alpha, K, M), (n_alpha, K, K), (M, M)
    init_modes   {"R": (L, K, M), "Q": (L, K, K), "T": (L, M, M)} mode overlaps at alpha = 0
    eigenvalues  (L,) the distinct eigenvalues lambda_1 > ... > lambda_L
    seed, N      as given
    steps_per_second  SGD steps per wall-clock second inside the stepping loop (excludes set-up,
                 records and held-out estimates)
    steps_per_cpu_second  the same per second of CPU time of the stepping threads (this one,
                 and the C kernel's second one when ``threads`` is 2; what the cores do when
                 others share the machine; NaN where the OS has no thread clock)
    eps_g_holdout  Monte-Carlo estimate of eps_g on ``eps_holdout`` fresh samples per alpha, or None
    J_final      (K, N) student weights at the last alpha *in the eigenbasis* (J~ = J W)
    config       the remaining arguments (activation, K, M, eta, sigma_J, rotate, n_trainable,
                 untrainable, eps_holdout; "model": the family options unless today's model)
    kernel, threads  the step loop that ran ("c", "numba", or "numba-family" for the family's
                 variants, family_kernels.py; "numpy" for naive_simulate) and its threads (1 or
                 2; with threads=None, the count that did most of the steps)
    v            (n_alpha, K) the student readout at each record (readout = "trained"), or None
    """

    alpha: np.ndarray
    eps_g: np.ndarray
    R1: np.ndarray
    Q1: np.ndarray
    T1: np.ndarray
    init_modes: dict
    eigenvalues: np.ndarray
    seed: int
    N: int
    steps_per_second: float
    eps_g_holdout: np.ndarray | None = None
    steps_per_cpu_second: float = float("nan")
    J_final: np.ndarray | None = None
    config: dict = field(default_factory=dict)
    kernel: str = "numba"      # which step loop ran: "c" (ckernel.py) or "numba" (kernels.py)
    threads: int = 1           # threads of that step loop
    v: np.ndarray | None = None   # (n_alpha, K) student readout per record (trained readout)
    # modes_at = alpha0: the mode overlaps {"alpha", "R", "Q", "T"} of the record at alpha0
    # (the state an ODE restarted there starts from; solvers.app.compare)
    modes: dict | None = None


# --------------------------------------------------------------------------------------------
# Spectrum and exact eps_g
# --------------------------------------------------------------------------------------------

def power_law_eigenvalues(L, beta) -> np.ndarray:
    """lambda_l = lambda_+ / l^(1+beta), l = 1..L, with mean(lambda) = 1, i.e. Tr Sigma = N."""
    L = _positive_int("L", L)
    beta = _finite_real("beta", beta)
    if beta <= -1:
        raise ValueError(f"beta must be > -1 (eigenvalues must decrease), got {beta}")
    from solvers.core.eigenvalues import power_law_eigenvalues as spectrum
    return spectrum(L, beta)          # the one float64 spectrum (the numeric layer's too)


def eps_g_from_order_parameters(activation, K, M, R1, Q1, T1, *, student_activation=None,
                                teacher_activation=None, v=None, u=None):
    """Exact eps_g = <(zeta - sigma)^2>/2 from the level-1 order parameters.

    eps_g = 1/2 [ (1/M) sum_nm I2(T_nn, T_nm, T_mm) + (M/K^2) sum_ij I2(Q_ii, Q_ij, Q_jj)
                  - (2/K) sum_in I2(Q_ii, R_in, T_nn) ],
    I2 = (2/pi) asin(c12 / sqrt((1+c11)(1+c22))) for erf, c12 for linear.
    Leading axes broadcast (e.g. R1 of shape (n_alpha, K, M) with T1 of shape (M, M)); returns a
    float for unbatched input, else an array of the broadcast leading shape.

    The family (solvers/sim/family.py): ``student_activation`` / ``teacher_activation``
    (default ``activation``) and readouts v (K,) or (..., K) (e.g. a trained readout per alpha),
    u (M,) (default: the paper's sqrt(M)/K and 1/sqrt(M)) give
    1/2 [u I2_tt(T) u + v I2_ss(Q) v - 2 v I2_st(Q_ii, R, T_nn) u] with the pair's I2.
    """
    if (student_activation is not None or teacher_activation is not None or v is not None
            or u is not None or activation not in ACTIVATIONS):
        K, M = _positive_int("K", K), _positive_int("M", M)
        pv, pu = fam.readouts(K, M)
        s = fam.parse_activation(activation if student_activation is None
                                 else student_activation)
        t = fam.parse_activation(activation if teacher_activation is None
                                 else teacher_activation)
        eps = fam.eps_g(s, t, pv if v is None else v, pu if u is None else u, R1, Q1, T1)
        return float(eps) if np.ndim(eps) == 0 else eps
    _check_activation(activation)
    K = _positive_int("K", K)
    M = _positive_int("M", M)
    R1, Q1, T1 = (np.asarray(a, dtype=np.float64) for a in (R1, Q1, T1))
    for name, arr, shape in (("R1", R1, (K, M)), ("Q1", Q1, (K, K)), ("T1", T1, (M, M))):
        if arr.ndim < 2 or arr.shape[-2:] != shape:
            raise ValueError(f"{name} must have trailing shape {shape}, got {arr.shape}")
    from solvers.core.modes_kernel import eps_g   # the one ε_g of level-1 overlaps
    eps = eps_g(R1, Q1, T1, activation)
    return float(eps) if np.ndim(eps) == 0 else eps


# --------------------------------------------------------------------------------------------
# Overlaps (NumPy: the records are a small part of a run, and the C kernel's path has no numba)
# --------------------------------------------------------------------------------------------

_mode_overlaps = initial.mode_overlaps    # einsum, not BLAS (see there)


def _level1(U, V, lam, block):
    """sum_k lam_k U[:, block k] V[:, block k]^T / N."""
    return np.einsum("l,lpq->pq", lam, _mode_overlaps(U, V, block))


# --------------------------------------------------------------------------------------------
# Validation and set-up shared by simulate and naive_simulate
# --------------------------------------------------------------------------------------------

def _check_activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")


def _positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _finite_real(name, value):
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


@dataclass
class _Setup:
    activation: str
    K: int
    M: int
    N: int
    eta: float
    sigma_J: float
    seed: int
    steps: np.ndarray          # record points in steps, sorted, unique
    lam: np.ndarray            # (L,)
    block: int                 # N // L
    n_tr: int
    untrainable: str
    rotate: bool
    eps_holdout: int
    J0: np.ndarray | None
    B0: np.ndarray | None
    generator: str = DEFAULT_GENERATOR
    fam: fam.Family | None = None       # model options (solvers/sim/family.py)
    init: str = "random"                # or "informed", "modes" (solvers.core.initial)
    init_modes: dict | None = None      # the given overlaps of init = "modes"
    modes_step: int | None = None       # the record whose mode overlaps are kept (modes_at)

    @property
    def default_model(self) -> bool:
        """today's model: the original kernels and eps_g run, bit for bit as before"""
        return self.fam.is_default(self.K, self.M)

    @property
    def scale(self):
        """sqrt(lambda) of each eigenbasis coordinate: z~ = scale * z."""
        return np.repeat(np.sqrt(self.lam), self.block)

    def config(self):
        out = dict(activation=self.activation, K=self.K, M=self.M, eta=self.eta,
                   sigma_J=self.sigma_J, rotate=self.rotate, n_trainable=self.n_tr,
                   untrainable=self.untrainable, eps_holdout=self.eps_holdout,
                   generator=self.generator)
        if not self.default_model:
            out["model"] = self.fam.describe()
        if self.init != "random":
            out["init"] = self.init
        return out


# The family's options (solvers/sim/family.py), keyword arguments of simulate, naive_simulate
# and simulate_many; their defaults are today's model.
FAMILY_DEFAULTS = dict(student_activation=None, teacher_activation=None, normalisation="paper",
                       student_readout=None, teacher_readout=None, readout="fixed",
                       eta_readout=None, noise=0, weight_decay=0, batch_size=1, schedule=None,
                       weight_decay_readout=0)


def _validate(*, activation, K, M, N, eta, sigma_J, seed, alphas, L=None, beta=None,
              eigenvalues=None, rotate=False, n_trainable=None, untrainable="zero",
              eps_holdout=0, J0=None, B0=None, generator=DEFAULT_GENERATOR, init="random",
              modes_at=None, **model) -> _Setup:
    unknown = set(model) - set(FAMILY_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown simulate argument(s) {sorted(unknown)}")
    if not isinstance(activation, str):
        raise ValueError(f"activation must be a string, got {activation!r}")
    K_, M_ = (_positive_int("K", K), _positive_int("M", M))
    init_modes = None
    if isinstance(init, dict):
        init_modes, init = init, "modes"
    elif init not in ("random", "informed"):
        raise ValueError(f"init must be 'random', 'informed' or a dict of mode overlaps "
                         f"R, Q, T, got {init!r}")
    family = fam.family(K_, M_, activation=activation, **{**FAMILY_DEFAULTS, **model})
    if family.is_default(K_, M_):
        # today's model, whatever spelling ("x", or activation overridden in both slots):
        # its kernels, eps_g and holdout read the canonical name
        activation = family.student.name
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    K = _positive_int("K", K)
    M = _positive_int("M", M)
    N = _positive_int("N", N)
    eta = _finite_real("eta", eta)
    if eta <= 0:
        raise ValueError(f"eta must be > 0, got {eta}")
    sigma_J = _finite_real("sigma_J", sigma_J)
    if sigma_J < 0:
        raise ValueError(f"sigma_J must be >= 0, got {sigma_J}")
    seed = _positive_int("seed", seed, minimum=0)

    if eigenvalues is not None:
        if L is not None or beta is not None:
            raise ValueError("give either L and beta (power law) or eigenvalues, not both")
        lam = np.asarray(eigenvalues, dtype=np.float64)
        if lam.ndim != 1 or lam.size == 0:
            raise ValueError(f"eigenvalues must be a non-empty 1-d list, got shape {lam.shape}")
        if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ValueError("eigenvalues must be finite and > 0")
        if np.any(np.diff(lam) >= 0):
            raise ValueError("eigenvalues must be strictly decreasing (lambda_1 > ... > lambda_L)")
    else:
        if L is None or beta is None:
            raise ValueError("give either L and beta (power law) or eigenvalues")
        lam = power_law_eigenvalues(L, beta)
    L = lam.size
    if N % L:
        raise ValueError(f"L = {L} must divide N = {N}")

    a = np.asarray(alphas, dtype=np.float64)
    if a.ndim == 0:
        a = a[None]
    if a.ndim != 1 or a.size == 0:
        raise ValueError("alphas must be a non-empty 1-d list of times")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("alphas must be finite and >= 0")
    if a.max() * N > MAX_STEPS:
        raise ValueError(f"alpha = {a.max():g} at N = {N} is {a.max() * N:.3g} SGD steps, more "
                         f"than the simulator accepts ({MAX_STEPS:.0e}); lower alpha_max")
    # sorted and de-duplicated (np.unique would import numpy.ma: ~10 ms of the command's start)
    steps = np.array(sorted(set(np.rint(a * N).astype(np.int64).tolist())), dtype=np.int64)
    modes_step = None
    if modes_at is not None:
        modes_step = int(np.rint(_finite_real("modes_at", modes_at) * N))
        if modes_step not in steps:
            raise ValueError(f"modes_at = {modes_at:g} is not a record point (alpha = steps / "
                             f"N of one of alphas)")

    if n_trainable is None:
        n_tr = N
    else:
        n_tr = _positive_int("n_trainable", n_trainable)
        if n_tr > N:
            raise ValueError(f"n_trainable must be between 1 and N = {N}, got {n_tr}")
    if untrainable not in ("zero", "frozen"):
        raise ValueError(f"untrainable must be 'zero' or 'frozen', got {untrainable!r}")
    eps_holdout = _positive_int("eps_holdout", eps_holdout, minimum=0)
    if not isinstance(rotate, (bool, np.bool_)):
        raise ValueError(f"rotate must be True or False, got {rotate!r}")

    def weights(name, W, rows):
        if W is None:
            return None
        W = np.array(W, dtype=np.float64)
        if W.shape != (rows, N):
            raise ValueError(f"{name} must have shape ({rows}, {N}), got {W.shape}")
        if not np.all(np.isfinite(W)):
            raise ValueError(f"{name} must be finite")
        return W

    return _Setup(activation, K, M, N, eta, sigma_J, seed, steps, lam, N // L, n_tr,
                  untrainable, bool(rotate), eps_holdout, weights("J0", J0, K),
                  weights("B0", B0, M), generator, family, init,
                  _given_modes(init_modes, L, K, M, J0, B0, n_tr, N, untrainable), modes_step)


def _given_modes(modes, L, K, M, J0, B0, n_tr, N, untrainable):
    """Checked float64 mode overlaps of init = {"R", "Q", "T"}, or None."""
    if modes is None:
        return None
    if J0 is not None or B0 is not None:
        raise ValueError("give either J0 / B0 or init overlaps, not both")
    if n_tr < N and untrainable == "zero":
        raise ValueError("init from overlaps with n_trainable < N needs untrainable = "
                         "'frozen' (zeroing would change the given overlaps)")
    out = {}
    for k, shape in (("R", (L, K, M)), ("Q", (L, K, K)), ("T", (L, M, M))):
        if k not in modes:
            raise ValueError(f"init overlaps need R, Q and T (missing {k})")
        a = np.array(modes[k], dtype=np.float64)
        if a.shape != shape or not np.all(np.isfinite(a)):
            raise ValueError(f"init overlaps {k} must be finite of shape {shape}, got "
                             f"{a.shape}")
        out[k] = a
    return out


_streams = initial.streams     # teacher, student, rotation, training inputs, held-out inputs


def _noise_stream(seed):
    """The label noise's generator: child 5 of SeedSequence(seed) (children 0-4 are unchanged,
    so adding noise moves neither weights nor inputs)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(6)[5]))


def _input_source(st: _Setup):
    """(numpy Generator, xoshiro state, scratch) of the training inputs for the kernels.

    Both come from SeedSequence(seed).spawn(5)[3]; the unused one is a dummy (``_draw`` picks
    the source by the generator's code).
    """
    child = np.random.SeedSequence(st.seed).spawn(5)[3]
    if st.generator == "numpy":
        return (np.random.Generator(np.random.PCG64(child)),
                np.zeros((4, 0), dtype=np.uint64), np.zeros(0, dtype=np.uint64))
    return (np.random.Generator(np.random.PCG64(0)), seed_state(child),
            np.empty(2 * st.N, dtype=np.uint64))


_haar_orthogonal = initial.haar_orthogonal


def _initial_weights(st: _Setup):
    """(J, B, W) in the original basis (W = None unless rotated) and the eigenbasis (J~, B~)
    (solvers.core.initial.draw_weights)."""
    return initial.draw_weights(st.seed, st.K, st.M, st.N, st.sigma_J, rotate=st.rotate,
                                n_trainable=st.n_tr, untrainable=st.untrainable, J0=st.J0,
                                B0=st.B0, informed=st.init == "informed",
                                modes=st.init_modes)


def _init_modes(st: _Setup, Jt, Bt):
    return {"R": _mode_overlaps(Jt, Bt, st.block),
            "Q": _mode_overlaps(Jt, Jt, st.block),
            "T": _mode_overlaps(Bt, Bt, st.block)}


def initial_mode_overlaps(*, K, M, N, sigma_J, seed, L=None, beta=None, eigenvalues=None,
                          rotate=False, n_trainable=None, untrainable="zero", init="random"):
    """The mode overlaps {"R", "Q", "T"} (L, ., .) that ``simulate`` with these arguments starts from.

    ``scaling-odes solve`` with ``init = "random"`` starts the ODEs here, so theory and simulation
    of the same seed share one realisation.
    """
    st = _validate(activation="linear", K=K, M=M, N=N, eta=1.0, sigma_J=sigma_J, seed=seed,
                   alphas=[0.0], L=L, beta=beta, eigenvalues=eigenvalues, rotate=rotate,
                   n_trainable=n_trainable, untrainable=untrainable, init=init)
    *_, Jt, Bt = _initial_weights(st)
    return _init_modes(st, Jt, Bt)


def erf(u):
    """scipy.special.erf, imported on first use (SciPy adds ~0.3 s to the command's start-up)."""
    from scipy.special import erf as _erf
    return _erf(u)


def _record_modes(st: _Setup, target, Jt, Bt, kept):
    """The mode overlaps at the ``modes_at`` record (eigenbasis weights Jt, Bt), else ``kept``."""
    if target != st.modes_step:
        return kept
    return {"alpha": int(target) / st.N, **_init_modes(st, Jt, Bt)}


def _holdout_eps(st: _Setup, rng, Jt, Bt, scale, v=None):
    """Monte-Carlo 1/2 <(zeta - sigma)^2> over st.eps_holdout fresh samples (eigenbasis
    weights), without label noise; v: the current student readout (family models)."""
    act = (lambda u: erf(u * _INV_SQRT2)) if st.activation == "erf" else (lambda u: u)
    batch = max(1, _HOLDOUT_BATCH_WORDS // st.N)
    total, left = 0.0, st.eps_holdout
    f = st.fam
    while left:
        n = min(batch, left)
        Z = rng.standard_normal((n, st.N)) * scale
        x = Z @ Jt.T / math.sqrt(st.N)
        y = Z @ Bt.T / math.sqrt(st.N)
        if st.default_model:
            d = act(y).sum(1) / math.sqrt(st.M) - act(x).sum(1) * (math.sqrt(st.M) / st.K)
        else:
            d = f.teacher(y) @ f.u - f.student(x) @ (f.v if v is None else v)
        total += float(d @ d)
        left -= n
    return 0.5 * total / st.eps_holdout


def _divergence_check(st: _Setup, Jt, Bt, T1) -> DivergenceCheck:
    """The divergence bound of this run (solvers/sim/divergence.py), from its initial weights."""
    R0, Q0 = _level1(Jt, Bt, st.lam, st.block), _level1(Jt, Jt, st.lam, st.block)
    f = st.fam

    def eps0():
        if st.default_model:
            return float(eps_g_from_order_parameters(st.activation, st.K, st.M, R0, Q0, T1))
        return float(fam.eps_g(f.student, f.teacher, f.v, f.u, R0, Q0, T1))
    check = DivergenceCheck(T1=T1, Q1_0=Q0, eta=st.eta, sigma_J=st.sigma_J, v=f.v, u=f.u,
                            noise=f.noise, eps0=eps0)
    check.check_start(st.N)
    return check


def _result(st: _Setup, R1, Q1, T1, init_modes, rate, holdout, J_final, vs=None):
    R1, Q1 = np.array(R1), np.array(Q1)
    if st.default_model:
        eps = eps_g_from_order_parameters(st.activation, st.K, st.M, R1, Q1, T1)
    else:
        f = st.fam
        eps = fam.eps_g(f.student, f.teacher, f.v if vs is None else np.array(vs), f.u,
                        R1, Q1, T1)
    res = SimulationResult(
        alpha=st.steps / st.N,
        eps_g=np.asarray(eps, dtype=np.float64).reshape(len(st.steps)),
        R1=R1, Q1=Q1, T1=T1, init_modes=init_modes, eigenvalues=st.lam.copy(),
        seed=st.seed, N=st.N, steps_per_second=rate,
        eps_g_holdout=None if holdout is None else np.array(holdout),
        J_final=J_final, config=st.config())
    if vs is not None:
        res.v = np.array(vs)
    return res


def _thread_time():
    try:
        return time.thread_time()
    except (AttributeError, OSError):
        return float("nan")


def _progress_bar(enabled, total):
    from solvers.core.progress import bar
    return bar(int(total), "SGD", unit="step", enabled=bool(enabled))


def _load_average() -> float:
    """1-minute load average (0 where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


# Two threads wait for each other at every step: when other work keeps the CPUs busy, the
# waiting thread is descheduled and a step costs a time slice.  Measured (bench/ARCHIVE.md §20),
# N = 1024, K = M = 2, 2 CPUs: at load 12-20 two threads ran 3-6k steps/s against 170-520k on
# one; the whole command at load 3.4-10 was 2-5x the naive loop instead of 20-25x.  So two
# threads only when the 1-minute load leaves a CPU idle on average (the load of §13's idle runs,
# the benchmark's own runs included, was 0.9-1.3 on 2 CPUs).
_IDLE_CPU_MARGIN = 0.5


def _threads(st: _Setup, threads):
    """Threads of the C step loop: 1 or 2 as asked; None = 2 when a second CPU is free for this
    call (background.parallel_allowed: not in simulate_many's threads or a sweep's workers, not
    SCALING_ODES_SERIAL=1; and the 1-minute load average at most CPUs - 0.5) and
    N >= _TWO_THREAD_MIN_N."""
    if threads is not None:
        return threads
    from solvers.hierarchy.background import parallel_allowed
    if st.N < _TWO_THREAD_MIN_N[st.generator] or not parallel_allowed():
        return 1
    return 2 if _load_average() <= available_cpus() - _IDLE_CPU_MARGIN else 1


class _ThreadChoice:
    """The C kernel's threads, call by call.  One and two threads give the same bits, so a run
    may switch between them at any call.  When simulate chose two itself, the choice is kept
    honest by measurement: two threads lose when the second CPU is busy with other work (every
    step waits for the slower thread), so every PROBE-th long call runs on the other count and
    the faster of the recent rates (steps per wall second) is used from then on — if it is
    faster by more than MARGIN, so that the noise of single calls (~15 % here) does not flip it.
    """

    PROBE = 10
    MARGIN = 1.1

    def __init__(self, start: int, adaptive: bool, min_steps: int):
        self.current = start
        self.adaptive = adaptive and start == 2
        self.min_steps = min_steps
        self.rate: dict = {}
        self.calls = 0
        self.steps = {1: 0, 2: 0}

    def pick(self, n: int) -> int:
        if not self.adaptive or n < self.min_steps:
            return self.current
        self.calls += 1
        return 3 - self.current if self.calls % self.PROBE == 0 else self.current

    def record(self, threads: int, n: int, wall: float):
        self.steps[threads] += n
        if not self.adaptive or n < self.min_steps or wall <= 0:
            return
        r = n / wall
        old = self.rate.get(threads)
        self.rate[threads] = r if old is None else 0.5 * (old + r)
        best = max(self.rate, key=self.rate.get)
        if self.rate[best] > self.MARGIN * self.rate.get(self.current, 0.0):
            self.current = best

    @property
    def used(self) -> int:
        """the thread count that did most of the steps"""
        return 2 if self.steps[2] > self.steps[1] else 1


def _stepper(st: _Setup, act, columns, g_data, state, bits, Jw, Bw, scale, z, x, y, threads):
    """Draw the first sample into (z, x, y) and return (run, kernel name): run(n, threads) does
    n SGD steps in place and returns (-1 or the step at which a field became non-finite, CPU
    seconds of a second thread); the numba kernels ignore ``threads``.

    The xoshiro generators ("xoshiro", "float32") with the row layout run the C kernel
    (solvers/sim/ckernel.py) when it is available; NumPy's stream, the column layout and the
    case without a C compiler run the numba kernels (solvers/sim/kernels.py, imported here, not
    before: numba's start-up is ~0.9 s).
    """
    if st.generator in ("xoshiro", "float32") and not columns:
        from solvers.sim.ckernel import kernel
        ck = kernel()
        if ck is not None:
            ck.fill(st.generator, state, scale, z)
            isq = 1.0 / math.sqrt(st.N)
            x[:] = np.einsum("ia,a->i", Jw, z) * isq     # no BLAS (see _mode_overlaps)
            y[:] = np.einsum("ia,a->i", Bw, z) * isq
            work = ck.work(st.N, st.K, st.M)
            return (lambda n, nth: ck.steps(st.generator, state, Jw, Bw, scale, st.n_tr, st.eta,
                                            act, n, z, x, y, work, nth)), "c"
    from solvers.sim import kernels
    gen = _GEN_CODE[st.generator]
    kernels._prime(gen, g_data, state, bits, Jw, Bw, scale, z, x, y, columns)
    return (lambda n, nth: (kernels._steps(gen, g_data, state, bits, Jw, Bw, scale, st.n_tr,
                                           st.eta, act, n, z, x, y, columns), 0.0)), "numba"


# --------------------------------------------------------------------------------------------
# Public simulators
# --------------------------------------------------------------------------------------------

def simulate(*, activation, K, M, N, eta, sigma_J, seed, alphas, L=None, beta=None,
             eigenvalues=None, rotate=False, n_trainable=None, eps_holdout=0, progress=False,
             J0=None, B0=None, untrainable="zero", generator=DEFAULT_GENERATOR,
             threads=None, **model) -> SimulationResult:
    """Online SGD of the soft committee machine at finite N, in compiled kernels (C for the
    xoshiro generators with K < 32 when a C compiler is available, numba otherwise).

    activation "erf" | "linear"; K student, M teacher units; N input dimension; eta learning rate;
    sigma_J std of the initial student weights; seed (int >= 0) fixes everything random.
    alphas: times at which to record; the grid actually hit is steps = round(alpha N), returned
    sorted and de-duplicated in ``result.alpha``.
    Spectrum: L and beta (power law, mean eigenvalue 1) or an explicit strictly decreasing
    ``eigenvalues`` list (used as given).  L must divide N.
    rotate: Sigma = W diag(lambda) W^T with W Haar-orthogonal from the seed (see module doc);
    drawing W is a one-off O(N^3) QR, the steps cost the same as without rotation.
    n_trainable: only the first n_trainable eigen-directions are trainable (None means all N);
    untrainable: "zero" (default) zeroes the untrainable components of J~ at init, "frozen" keeps
    their random initial values (the paper's Eq. 10 convention); see the module doc.
    eps_holdout: if > 0, also estimate eps_g on that many fresh samples at each record point.
    progress: tqdm bar over steps.  J0 (K, N), B0 (M, N): optional initial weights in the
    original basis, replacing the random draws.
    generator: source of the training inputs (module doc), "float32" (default: xoshiro256++
    lanes, two float32 inverse-CDF normals per word, |z| < 5.42; the fastest, ~1.5x the
    ziggurat's step rate at N = 1024), "xoshiro" (the same lanes, a float64 ziggurat; the
    default before) or "numpy" (NumPy's PCG64 stream, the reference).  A seed reproduces a
    run together with its generator.  The weights, the rotation and the held-out samples do
    not depend on it.
    threads: 1 or 2 threads for one run's steps (the C kernel only; the same bits either way);
    None (default) takes 2 when a second CPU is free for this call (not in a worker thread or
    process, and the 1-minute load average at most CPUs - 0.5) and N >= 512 (float32) or 1024
    (xoshiro), and goes back to 1 if that measures faster (``_ThreadChoice``).

    Model options (the committee-machine family, solvers/sim/family.py; defaults = today's
    model): ``activation`` is now any of "erf", "linear", "relu" or a polynomial string in x for
    both networks; ``student_activation`` / ``teacher_activation`` override it per network;
    ``normalisation`` "paper" | "1/K" | "1/sqrt(K)" | "none" or explicit ``student_readout``
    (K numbers) / ``teacher_readout`` (M numbers); ``readout`` "fixed" | "trained" with
    ``eta_readout`` (and ``weight_decay_readout`` κ_v: v decays by η_v κ_v / N a step);
    ``noise`` (label-noise variance, clean eps_g reported), ``weight_decay``
    (first layer, trainable coordinates), ``batch_size`` (samples per step; alpha = steps / N),
    ``schedule`` (None, or {"kind": "constant"} | {"kind": "power", "alpha0", "p"} |
    {"kind": "steps", "alphas", "etas"}; eta at each step's start).  Today's model runs on the
    kernels above, bit for bit as before; every other variant runs the numba loop of
    family_kernels.py (``result.kernel == "numba-family"``, one thread), which draws the same
    input stream (label noise from a sixth stream of the seed).  ``init="informed"`` starts
    the student's rows i < min(K, M) at the teacher's (solvers.core.initial; default "random").
    ``modes_at=alpha0`` (a record point) keeps the mode overlaps R, Q, T there in
    ``result.modes``: the state from which ``compare`` restarts the ODEs.
    Raises ValueError on bad input and FloatingPointError if the weights become non-finite.
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, Integral)
                                or threads not in (1, 2)):
        raise ValueError(f"threads must be 1, 2 or None, got {threads!r}")
    st = _validate(activation=activation, K=K, M=M, N=N, eta=eta, sigma_J=sigma_J, seed=seed,
                   alphas=alphas, L=L, beta=beta, eigenvalues=eigenvalues, rotate=rotate,
                   n_trainable=n_trainable, untrainable=untrainable, eps_holdout=eps_holdout,
                   J0=J0, B0=B0, generator=generator, **model)
    if not st.default_model:
        return _simulate_family(st, progress)
    *_, Jt, Bt = _initial_weights(st)
    *_, g_hold = _streams(st.seed)
    g_data, state, bits = _input_source(st)
    scale = st.scale
    init_modes = _init_modes(st, Jt, Bt)
    T1 = _level1(Bt, Bt, st.lam, st.block)
    diverged = _divergence_check(st, Jt, Bt, T1)

    act = _ACT_CODE[st.activation]
    columns = st.K >= _COLUMN_KERNEL_MIN_K
    if columns:
        Jw, Bw = np.ascontiguousarray(Jt.T), np.ascontiguousarray(Bt.T)
    else:
        Jw, Bw = Jt, Bt
    # the kernels work in place on cache-line aligned copies (see ckernel.aligned)
    from solvers.sim.ckernel import aligned
    Jw, Bw, scale = aligned(Jw), aligned(Bw), aligned(scale)
    z, x, y = aligned(np.empty(st.N)), np.empty(st.K), np.empty(st.M)
    run, kernel_name = _stepper(st, act, columns, g_data, state, bits, Jw, Bw, scale, z, x, y,
                                threads)
    start = _threads(st, threads) if kernel_name == "c" else 1
    work = _CALL_WORK if start == 1 else max(_CALL_WORK, _CALL_WORK_TWO_THREADS)
    per_call = max(1, work // (st.N * (st.K + st.M)))
    choice = _ThreadChoice(start, adaptive=threads is None, min_steps=max(1, per_call // 2))
    R1s, Q1s, holdout, modes = [], [], ([] if st.eps_holdout else None), None
    done, stepping_time, stepping_cpu = 0, 0.0, 0.0
    with _progress_bar(progress, st.steps[-1]) as bar:
        for target in st.steps:
            while done < target:
                n = int(min(per_call, target - done))
                nth = choice.pick(n)
                t0, c0 = time.perf_counter(), _thread_time()
                bad, helper_cpu = run(n, nth)
                wall = time.perf_counter() - t0
                stepping_time += wall
                stepping_cpu += _thread_time() - c0 + helper_cpu
                choice.record(nth, n, wall)
                if bad >= 0:
                    raise diverged.error(done + bad, st.N)
                done += n
                bar.update(n)
            Jrow = np.ascontiguousarray(Jw.T) if columns else Jw
            R1 = _level1(Jrow, Bt, st.lam, st.block)
            Q1 = _level1(Jrow, Jrow, st.lam, st.block)
            diverged.check(done, st.N, Q1, R1)
            modes = _record_modes(st, target, Jrow, Bt, modes)
            R1s.append(R1)
            Q1s.append(Q1)
            if holdout is not None:
                holdout.append(_holdout_eps(st, g_hold, Jrow, Bt, scale))
    rate = done / stepping_time if stepping_time > 0 else float("nan")
    J_final = np.array(Jw.T if columns else Jw)
    res = _result(st, R1s, Q1s, T1, init_modes, rate, holdout, J_final)
    res.modes = modes
    res.steps_per_cpu_second = done / stepping_cpu if stepping_cpu > 0 else float("nan")
    res.kernel, res.threads = kernel_name, choice.used
    return res


def _simulate_family(st: _Setup, progress) -> SimulationResult:
    """``simulate`` for a model other than today's: the numba loop of family_kernels.py."""
    from solvers.sim import family_kernels as fk
    f = st.fam
    *_, Jt, Bt = _initial_weights(st)
    *_, g_hold = _streams(st.seed)
    g_noise = _noise_stream(st.seed)
    g_data, state, bits = _input_source(st)
    scale = st.scale
    init_modes = _init_modes(st, Jt, Bt)
    T1 = _level1(Bt, Bt, st.lam, st.block)
    diverged = _divergence_check(st, Jt, Bt, T1)
    K, M, N, bsz = st.K, st.M, st.N, f.batch_size
    J, B = np.ascontiguousarray(Jt), np.ascontiguousarray(Bt)
    v = f.v.copy()
    z, x, y = np.empty(N), np.empty(K), np.empty(M)
    G = np.zeros((K, N) if bsz > 1 else (K, 1))
    dv = np.zeros(K)
    sqrt_noise = math.sqrt(f.noise)
    no_noise = np.empty(0)
    gen = _GEN_CODE[st.generator]
    per_call = max(1, _CALL_WORK // (N * (K + M) * bsz))
    if bsz == 1:        # the fused loop carries the current sample and its fields
        fk.family_prime(gen, g_data, state, bits, J, B, scale, z, x, y)
    R1s, Q1s, vs, holdout, modes = [], [], [], ([] if st.eps_holdout else None), None
    done, stepping_time, stepping_cpu = 0, 0.0, 0.0
    with _progress_bar(progress, st.steps[-1]) as bar:
        for target in st.steps:
            while done < target:
                n = int(min(per_call, target - done))
                etas = f.schedule.etas_of_steps(st.eta, N, done, n)
                noise = (sqrt_noise * g_noise.standard_normal(n * bsz) if f.noise > 0
                         else no_noise)
                t0, c0 = time.perf_counter(), _thread_time()
                if bsz == 1:
                    bad = fk.family_steps_fused(
                        gen, g_data, state, bits, J, B, scale, st.n_tr, etas, f.weight_decay, v,
                        f.u, f.eta_readout, f.weight_decay_readout, f.trained, noise,
                        f.student.code,
                        f.student.dcoeffs, f.student.coeffs, f.teacher.code, f.teacher.coeffs,
                        z, x, y)
                else:
                    bad = fk.family_steps(
                        gen, g_data, state, bits, J, B, scale, st.n_tr, etas, f.weight_decay, v,
                        f.u, f.eta_readout, f.weight_decay_readout, f.trained, noise, bsz,
                        f.student.code,
                        f.student.dcoeffs, f.student.coeffs, f.teacher.code, f.teacher.coeffs,
                        z, x, y, G, dv)
                stepping_time += time.perf_counter() - t0
                stepping_cpu += _thread_time() - c0
                if bad >= 0:
                    raise diverged.error(done + bad, N)
                done += n
                bar.update(n)
            R1 = _level1(J, Bt, st.lam, st.block)
            Q1 = _level1(J, J, st.lam, st.block)
            diverged.check(done, N, Q1, R1, v)
            modes = _record_modes(st, target, J, Bt, modes)
            R1s.append(R1)
            Q1s.append(Q1)
            vs.append(v.copy())
            if holdout is not None:
                holdout.append(_holdout_eps(st, g_hold, J, Bt, scale, v))
    rate = done / stepping_time if stepping_time > 0 else float("nan")
    res = _result(st, R1s, Q1s, T1, init_modes, rate, holdout, np.array(J),
                  vs if f.trained else None)
    res.modes = modes
    res.steps_per_cpu_second = done / stepping_cpu if stepping_cpu > 0 else float("nan")
    res.kernel, res.threads = "numba-family", 1
    return res


def naive_simulate(*, activation, K, M, N, eta, sigma_J, seed, alphas, L=None, beta=None,
                   eigenvalues=None, rotate=False, n_trainable=None, eps_holdout=0,
                   progress=False, J0=None, B0=None, untrainable="zero",
                   generator=DEFAULT_GENERATOR, **model) -> SimulationResult:
    """Reference implementation of ``simulate``: one NumPy iteration per sample, literal formulas.

    Same arguments, same random streams, hence the same trajectory up to rounding.  It works in
    the original basis: with ``rotate`` it forms xi = W z~ (O(N^2) per step), projects the
    gradient with P = W_tr W_tr^T, and evaluates R1 = J Sigma B^T / N with Sigma = W Lambda W^T,
    which checks the eigenbasis shortcut of ``simulate``.  Used as the benchmark baseline.
    Runs every model of the family (``simulate``'s model options), literally: B samples per
    step, each with its label noise, the step's eta from the schedule, decay, readout update.
    """
    st = _validate(activation=activation, K=K, M=M, N=N, eta=eta, sigma_J=sigma_J, seed=seed,
                   alphas=alphas, L=L, beta=beta, eigenvalues=eigenvalues, rotate=rotate,
                   n_trainable=n_trainable, untrainable=untrainable, eps_holdout=eps_holdout,
                   J0=J0, B0=B0, generator=generator, **model)
    J, B, W, Jt0, Bt0 = _initial_weights(st)
    *_, g_hold = _streams(st.seed)
    g_data, state, _ = _input_source(st)
    if st.generator == "numpy":
        def draw():
            return scale * g_data.standard_normal(st.N)
    else:
        kind = "float32" if st.generator == "float32" else "ziggurat"

        def draw():
            from solvers.sim.normals import standard_normal
            return standard_normal(state, st.N, scale, kind)
    scale = st.scale
    init_modes = _init_modes(st, Jt0, Bt0)
    lam_a = scale**2
    if W is None:
        Sigma = None
        mask = (np.arange(st.N) < st.n_tr).astype(np.float64)
    else:
        Sigma = (W * lam_a) @ W.T
        P = W[:, :st.n_tr] @ W[:, :st.n_tr].T

    def level1(U, V):
        return (U * lam_a) @ V.T / st.N if Sigma is None else U @ Sigma @ V.T / st.N

    if not st.default_model:
        return _naive_family(st, progress, J, B, W, Jt0, Bt0, draw, g_hold, level1, Sigma,
                             P if W is not None else None, mask if W is None else None)
    if st.activation == "erf":
        g = lambda u: erf(u * _INV_SQRT2)  # noqa: E731
        gp = lambda u: _SQRT_2_OVER_PI * np.exp(-0.5 * u * u)  # noqa: E731
    else:
        g = lambda u: u  # noqa: E731
        gp = np.ones_like
    sqN, sqM = math.sqrt(st.N), math.sqrt(st.M)

    T1 = level1(B, B)
    R1s, Q1s, holdout, kept = [], [], ([] if st.eps_holdout else None), {"modes": None}

    def step(done):
        xi, x, y = _naive_sample(st, draw, J, B, W, done)
        delta = g(y).sum() / sqM - g(x).sum() * sqM / st.K
        grad = xi * mask if W is None else P @ xi
        J[...] += np.outer(st.eta * sqM / st.K * delta * gp(x), grad / sqN)

    def record(target):
        R1s.append(level1(J, B))
        Q1s.append(level1(J, J))
        kept["modes"] = _record_modes(st, target, J if W is None else J @ W, Bt0, kept["modes"])
        if holdout is not None:
            holdout.append(_holdout_eps(st, g_hold, *_eigen_weights(J, B, W), scale))

    rate, cpu_rate = _naive_loop(st, progress, step, record)
    res = _result(st, R1s, Q1s, T1, init_modes, rate, holdout, J if W is None else J @ W)
    res.modes = kept["modes"]
    res.steps_per_cpu_second = cpu_rate
    return res


def _naive_sample(st: _Setup, draw, J, B, W, done):
    """One fresh input xi (original basis) and its fields x = J xi / sqrt(N), y = B xi / sqrt(N);
    a non-finite student field ends the run (step ``done``)."""
    zt = draw()
    xi = zt if W is None else W @ zt
    x = J @ xi / math.sqrt(st.N)
    if not np.all(np.isfinite(x)):
        raise DivergenceCheck.non_finite(st, done)
    return xi, x, B @ xi / math.sqrt(st.N)


def _eigen_weights(J, B, W):
    """Student and teacher weights in the eigenbasis of the input covariance."""
    return (J, B) if W is None else (J @ W, B @ W)


def _naive_loop(st: _Setup, progress, step, record):
    """The naive simulators' outer loop: ``step(done)`` makes SGD step ``done``,
    ``record(target)`` runs at each recorded step (st.steps).  Returns the steps per second and per CPU second of
    the stepping alone.  Overflow is reported once, as FloatingPointError by the divergence
    check, not as a stream of NumPy warnings."""
    done, stepping_time, stepping_cpu = 0, 0.0, 0.0
    with _progress_bar(progress, st.steps[-1]) as bar, np.errstate(over="ignore",
                                                                    invalid="ignore"):
        for target in st.steps:
            t0, c0 = time.perf_counter(), _thread_time()
            while done < target:
                step(done)
                done += 1
            stepping_time += time.perf_counter() - t0
            stepping_cpu += _thread_time() - c0
            bar.update(int(target) - bar.n)
            record(target)
    return (done / stepping_time if stepping_time > 0 else float("nan"),
            done / stepping_cpu if stepping_cpu > 0 else float("nan"))


def _naive_family(st: _Setup, progress, J, B, W, Jt0, Bt0, draw, g_hold, level1, Sigma, P,
                  mask):
    """naive_simulate's loop for a model other than today's: literal formulas, one sample at
    a time (family conventions; see solvers/sim/family.py)."""
    f = st.fam
    g_noise = _noise_stream(st.seed)
    init_modes = _init_modes(st, Jt0, Bt0)
    scale = st.scale
    sqN = math.sqrt(st.N)
    sqrt_noise = math.sqrt(f.noise)
    v = f.v.copy()
    T1 = level1(B, B)
    R1s, Q1s, vs, holdout = [], [], [], ([] if st.eps_holdout else None)
    kept = {"modes": None}

    def step(done):
        nonlocal v
        eta_t = float(f.schedule.etas_of_steps(st.eta, st.N, done, 1)[0])
        G = np.zeros_like(J)
        dv = np.zeros(st.K)
        for _ in range(f.batch_size):
            xi, x, y = _naive_sample(st, draw, J, B, W, done)
            label = f.u @ f.teacher(y)
            if f.noise > 0:
                label += sqrt_noise * g_noise.standard_normal()
            delta = label - v @ f.student(x)
            grad = xi * mask if W is None else P @ xi
            G += np.outer(eta_t / f.batch_size * v * delta * f.student.prime(x), grad / sqN)
            dv += delta * f.student(x)
        if f.weight_decay:
            J[...] -= (eta_t * f.weight_decay / st.N) * (J * mask if W is None else J @ P)
        J[...] += G
        if f.trained:
            v = (v * (1 - f.eta_readout * f.weight_decay_readout / st.N)
                 + f.eta_readout / (st.N * f.batch_size) * dv)

    def record(target):
        R1s.append(level1(J, B))
        Q1s.append(level1(J, J))
        kept["modes"] = _record_modes(st, target, J if W is None else J @ W, Bt0, kept["modes"])
        vs.append(v.copy())
        if holdout is not None:
            holdout.append(_holdout_eps(st, g_hold, *_eigen_weights(J, B, W), scale, v))

    rate, cpu_rate = _naive_loop(st, progress, step, record)
    res = _result(st, R1s, Q1s, T1, init_modes, rate, holdout, J if W is None else J @ W,
                  vs if f.trained else None)
    res.modes = kept["modes"]
    res.steps_per_cpu_second = cpu_rate
    res.kernel = "numpy"
    return res


def simulate_many(seeds, n_jobs=None, **kwargs) -> list[SimulationResult]:
    """``simulate`` for each seed, spread over ``n_jobs`` threads; results in the order of seeds.

    n_jobs: number of threads (default: all available cores; 1 runs the seeds one after the
    other).  The compiled kernels release the GIL, so threads run on separate cores with no
    start-up cost (no new interpreter, no re-import, no kernel loading); between kernel calls a
    thread needs the GIL only for a few microseconds per ~10^7 multiply-adds.  Each seed's run is
    the same computation as ``simulate(seed=s, ...)``, so results are bit-identical to sequential
    calls.  ``progress=True`` shows one bar over seeds.
    """
    seeds = list(seeds)
    if not seeds:
        return []
    for s in seeds:
        _positive_int("seed", s, minimum=0)
    if "seed" in kwargs:
        raise ValueError("pass seeds as the first argument, not seed=")
    n_jobs = available_cpus() if n_jobs is None else _positive_int("n_jobs", n_jobs)
    n_jobs = min(n_jobs, len(seeds))
    progress = bool(kwargs.pop("progress", False))
    threads = kwargs.pop("threads", 1)   # per seed: the parallelism is over seeds
    # Validate once here so that bad input fails fast, with the message of simulate itself.
    _validate(seed=seeds[0], **kwargs)
    from solvers.core.progress import bar

    kwargs["threads"] = threads
    with bar(len(seeds), "SGD", unit="seed", label="seeds", enabled=progress) as shown:
        if n_jobs == 1:
            results = []
            for s in seeds:
                results.append(simulate(seed=s, **kwargs))
                shown.update(1)
            return results
        results = [None] * len(seeds)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            futures = {pool.submit(simulate, seed=s, **kwargs): k for k, s in enumerate(seeds)}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                shown.update(1)
    return results
