"""The written-out reference of linear K = M = 1 (v = u = 1) in the modes basis, from the
conventions, integrated by mpmath's Taylor-series ODE solver (not the code under test):

    dR_k = η(α) λ_k (T_k - R_k) - η(α) κ R_k,
    dQ_k = 2 η(α) λ_k (R_k - Q_k) + e2 (η(α)²/B) w_k λ_k [T_1 - 2 R_1 + Q_1 + noise] - 2 η(α) κ Q_k,

w_k = 1/L, e2 = 1 at order 2.  Shared by the label-noise / weight-decay / batch tests and the
learning-rate schedule tests."""
import mpmath


def linear_modes_eps(lam, init, alphas, eta_of, *, noise=0, kappa=0, batch=1, order=2, dps=30):
    """ε_g = (T_1 - 2 R_1 + Q_1)/2 at ``alphas``; ``eta_of(α)`` is called at the working
    precision (it converts its own numbers there); init = (R0, Q0, T) per mode."""
    with mpmath.workdps(dps):
        L = len(lam)
        lam = [mpmath.mpf(x) for x in lam]
        w = [mpmath.mpf(1) / L] * L
        noise, kappa = mpmath.mpf(noise), mpmath.mpf(kappa)
        R0, Q0, T = ([mpmath.mpf(x) for x in v] for v in init)
        T1 = sum(l * t for l, t in zip(lam, T, strict=True))
        e2 = 1 if order == 2 else 0

        def f(a, y):
            eta = eta_of(a)
            R, Q = y[:L], y[L:]
            R1 = sum(l * r for l, r in zip(lam, R, strict=True))
            Q1 = sum(l * q for l, q in zip(lam, Q, strict=True))
            dR = [eta * lam[k] * (T[k] - R[k]) - eta * kappa * R[k] for k in range(L)]
            dQ = [2 * eta * lam[k] * (R[k] - Q[k])
                  + e2 * eta**2 / batch * w[k] * lam[k] * (T1 - 2 * R1 + Q1 + noise)
                  - 2 * eta * kappa * Q[k] for k in range(L)]
            return dR + dQ

        sol = mpmath.odefun(f, 0, R0 + Q0)
        out = []
        for a in alphas:
            y = sol(mpmath.mpf(a))
            R1 = sum(l * r for l, r in zip(lam, y[:L], strict=True))
            Q1 = sum(l * q for l, q in zip(lam, y[L:], strict=True))
            out.append((T1 - 2 * R1 + Q1) / 2)
        return out


def jets_on_random_path(jets, mod, num, ctx, order, spread):
    """(path, t1, got): a polynomial path v1(τ) = Σ_k path[k] τ^k of level-1 values starting
    at the state's own (path[k], k ≥ 1: seeded normals / ``spread``), and the printed jets'
    coefficients got[k] (every output) of order k = 0..order along it, in ctx."""
    import numpy as np
    v0 = list(mod.closure(num.y_levels, num.c)[0])
    rng = np.random.default_rng(1)
    path = [v0] + [[mpmath.mpf(float(x)) / spread for x in rng.standard_normal(len(v0))]
                   for _ in range(order)]
    t1 = list(num.T_levels[0])
    state, out = jets.jets_start(path[0], t1, num.eta, ctx)
    got = [list(out)] + [list(jets.jets_extend(state, path[k], k)) for k in range(1, order + 1)]
    return path, t1, got
