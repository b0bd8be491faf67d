"""Independent reference implementations of two peer codes' published equations at L = 1.

The peers (S. Goldt's ``sgoldt/nn2pp``, C++, and ``sgoldt/pyscm``, Python/Cython; the code of
Goldt, Advani, Saxe, Krzakala, Zdeborová, NeurIPS 2019) integrate the order-parameter ODEs of
online SGD in soft committee machines on isotropic Gaussian inputs (Σ = I: one level, ν = 1).
These modules re-implement their right-hand sides and closed-form generalisation errors from the
equations alone, in plain numpy / mpmath and with no import from ``derive`` or ``solvers``, so
that tests/test_peer_equations.py can hold the project's generated systems against them.

nn2pp_equations  the ODE right-hand side of nn2pp's ``scmpp_ode.cpp`` (erf and linear; output
                 noise, weight decay, trained second layer with its own learning rate), its
                 closed-form ε_g, and its forward-Euler stepping.
pyscm_equations  pyscm's closed-form ε_g for every pair of erf / ReLU / linear teacher and
                 student (``scm/scm.py``) and the map of its ODE (``scm/ode/scm_ode_erf.pyx``)
                 onto the nn2pp right-hand side.
"""
