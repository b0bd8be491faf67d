"""The spec of the simulator's headline (erf, K = M, L = 16, β = 1, η = 1/10, σ_J = 1/100, seed 0,
50 log-spaced points, no ``[simulate]`` section: the command at its defaults), shared by
bench/bench_simulate.py and bench/before_after_one.py.  Free of the package's imports, so that
a script timing another tree can use it."""


def spec_text(N: int = 1024, K: int = 2, alpha_max: float = 2000, extra: str = "") -> str:
    return f"""[model]
activation = "erf"
K = {K}
M = {K}
[data]
L = 16
beta = 1.0
N = {N}
[training]
eta = 0.1
sigma_J = 0.01
seed = 0
[solve]
alpha_max = {alpha_max}
n_points = 50
spacing = "log"
{extra}"""
