"""Helpers shared by the kernel Monte-Carlo tests."""
from solvers.theory.kernel import eigenlearning, rg_gda


def theory_vs_mc(spec, Ps, settings, mc):
    """For every ridge setting (T, s2) and P: (T, s2, P, eigenlearning point, RG/GDA point at
    ε = 0.01, MC mean, MC sem), the MC result ``mc`` run at the same Ps and settings."""
    for (T, s2), res in zip(settings, mc["settings"], strict=True):
        eig = eigenlearning(spec, Ps, T, s2)
        gda = rg_gda(spec, Ps, T, s2, 0.01)
        for P, e, g, m, s in zip(Ps, eig, gda, res["mean"], res["sem"], strict=True):
            yield T, s2, P, e, g, m, s
