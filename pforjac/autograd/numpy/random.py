"""`pforjac.autograd.numpy.random`: numpy's random module (random draws are constants)."""
from numpy.random import *  # noqa: F401,F403
from numpy.random import default_rng, seed, RandomState  # noqa: F401
