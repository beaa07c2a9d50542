"""autograd's tests/test_scipy.py, its scipy.special part (real dtypes); scipy.stats, signal
and integrate are not ported (pforjac has no such namespaces)."""
from __future__ import annotations

from .spec import R, U, unary_inputs

UNARY = [("psi", (0.3, 2.0)), ("digamma", (0.3, 2.0)), ("gamma", (0.3, 2.0)),
         ("gammaln", (0.3, 2.0)), ("rgamma", (0.3, 2.0)), ("j0", (0.2, 20.0)),
         ("j1", (0.2, 20.0)), ("y0", (0.2, 20.0)), ("y1", (0.2, 20.0)), ("i0", (0.2, 20.0)),
         ("i1", (0.2, 20.0)), ("i0e", (0.2, 20.0)), ("i1e", (0.2, 20.0)), ("erf", (-3.0, 3.0)),
         ("erfc", (-3.0, 3.0)), ("erfinv", (-0.95, 0.95)), ("erfcinv", (0.05, 1.95)),
         ("logit", (0.1, 0.9)), ("expit", (-4.05, 4.95)), ("ndtr", (-3.0, 3.0)),
         ("log_ndtr", (-3.0, 3.0)), ("ndtri", (0.05, 0.95)), ("entr", (0.1, 2.0))]


def build(np, sp, la, cases):
    pos = lambda *shape: R(*shape) ** 2 + 1.1
    cases.combo("sp_beta", sp.beta, (0, 1), [pos(4)], [pos(4)])
    cases.combo("sp_betaln", sp.betaln, (0, 1), [pos(4)], [pos(4)])
    cases.combo("sp_betainc", sp.betainc, (2,), [pos(4)], [pos(4)], [U(0.05, 0.95, 4)])
    cases.combo("sp_gammainc", sp.gammainc, (1,), [1.0], [R(4) ** 2 + 1.3])
    cases.combo("sp_gammaincc", sp.gammaincc, (1,), [1.0], [R(4) ** 2 + 1.3])
    for n in (0, 1, 2):
        cases.combo(f"sp_polygamma_{n}", sp.polygamma, (1,), [n], [R(4) ** 2 + 1.3])
    cases.combo("sp_jn", sp.jn, (1,), [2], [R(4) ** 2 + 1.3])
    cases.combo("sp_yn", sp.yn, (1,), [2], [R(4) ** 2 + 1.3])
    cases.combo("sp_iv", sp.iv, (1,), [U(1.0, 5.0, 4)], [R(4) ** 2 + 1.3])
    cases.combo("sp_ive", sp.ive, (1,), [U(1.0, 5.0, 4)], [R(4) ** 2 + 1.3])
    cases.combo("sp_multigammaln", sp.multigammaln, (0,), [U(4.0, 5.0), U(4.0, 5.0, 2, 3)],
                [1, 2, 3])
    for name, lims in UNARY:
        cases.combo(f"sp_{name}", getattr(sp, name), (0,), unary_inputs(*lims))
    cases.combo("sp_xlogy", sp.xlogy, (0, 1), [R(4), R(3, 4)], [U(0.5, 2.0, 4)])
    cases.combo("sp_xlog1py", sp.xlog1py, (0, 1), [R(4), R(3, 4)], [U(0.5, 2.0, 4)])
    lse = sp.logsumexp
    cases.combo("sp_logsumexp1", lse, (0,), [U(1.1, 1.1, 1), R(4), R(3, 4)], axis=[None, 0],
                keepdims=[True, False])
    cases.combo("sp_logsumexp2", lse, (0,), [R(3, 4), R(4, 5, 6), R(1, 5)], axis=[None, 0, 1],
                keepdims=[True, False])
    cases.combo("sp_logsumexp3", lse, (0,), [R(4)], b=[R(4).map(lambda v: 2.0 ** v)],
                axis=[None, 0], keepdims=[True, False])
    cases.combo("sp_logsumexp5", lse, (0,), [R(2, 3, 4)],
                b=[R(2, 3, 4).map(lambda v: 2.0 ** v)], axis=[None, 0, 1], keepdims=[True, False])
    cases.add("sp_logsumexp6", lambda a: lse(a, axis=1, keepdims=True), R(4, 3))
    for axis in (None, 0, -1):
        cases.add(f"sp_softmax_{axis}", lambda a, ax=axis: sp.softmax(a, axis=ax), R(3, 4))
        cases.add(f"sp_log_softmax_{axis}", lambda a, ax=axis: sp.log_softmax(a, axis=ax), R(3, 4))
