"""Long Jacobians that fit and show progress: the working memory estimated before the
vectorized pass runs, chunks chosen to fit a (here small, fake) memory budget, `chunk_size=`
on the entry points, and tqdm's bar on a Jacobian that runs in several chunks."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import memory, progress
from pforjac.program import make_program


@pytest.fixture
def budget():
    """Sets this thread's memory budget for one test, restored after it (and forgets which
    chunkings were said, so that the test sees its own warning)."""
    from pforjac import warn
    warn._warned.difference_update({k for k in warn._warned if k[0] == "chunks"})
    previous = memory.set_memory_limit(None)
    yield memory.set_memory_limit
    memory.set_memory_limit(previous)


def _wide(x):
    """(n,) -> (n,) through an (n, 64) intermediate: a large vectorized pass, a small result."""
    big = pj.sin(x[:, None] * np.linspace(0.0, 1.0, 64)[None, :])
    return pj.sum(big * big, axis=1) + x ** 3


def _chunk_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "chunks of" in str(w.message)]


def test_a_pass_larger_than_the_budget_completes_in_chunks_said_once(budget):
    x = np.linspace(0.0, 1.0, 300)
    want = np.asarray(pj.jacrev(_wide)(x))
    budget("2MiB")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [np.asarray(pj.jacrev(_wide)(x)) for _ in range(3)]
        fwd = np.asarray(pj.jacfwd(_wide)(x))
    said = _chunk_warnings(caught)
    assert len(said) == 1, said            # once, not once per call
    assert "300 rows" in said[0] and "2.0 MiB available" in said[0] and "chunk_size=" in said[0]
    assert "PFORJAC_MEMORY_LIMIT" in said[0]
    for g in got + [fwd]:
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def test_the_result_itself_must_still_fit(budget):
    budget(100_000)
    x = np.linspace(0.0, 1.0, 300)                   # a 720 kB result
    with pytest.raises(memory.JacobianMemoryError, match="nothing was computed"):
        pj.jacrev(_wide)(x)


def test_a_pass_within_the_budget_runs_whole(budget):
    budget("1GiB")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pj.jacrev(_wide)(np.linspace(0.0, 1.0, 50))


def test_the_estimate_counts_the_stacked_values_alive_at_once():
    def body(i):
        row = pj.one_hot(i, 100, np.float64)          # stacked (n, 100)
        return pj.exp(row) * 2.0                     # two more, the first dead after use
    program = make_program(body, [((), np.int32)])
    per_row = 100 * 8
    assert memory.working_memory(program, 10) == 10 * per_row * 2
    assert memory.working_memory(program, 1000) == 1000 * per_row * 2


@pytest.mark.parametrize("text, nbytes", [("4000000", 4_000_000), ("512MiB", 512 << 20),
                                          ("2G", 2_000_000_000), ("1.5 GiB", 3 << 29)])
def test_the_budget_reads_bytes_and_units_from_the_environment(monkeypatch, budget, text, nbytes):
    monkeypatch.setenv("PFORJAC_MEMORY_LIMIT", text)
    assert memory.memory_limit() == nbytes
    assert memory.available_memory() <= nbytes


def test_a_budget_that_is_not_a_size_is_refused(monkeypatch, budget):
    monkeypatch.setenv("PFORJAC_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="PFORJAC_MEMORY_LIMIT: expected a number of bytes"):
        memory.memory_limit()


def test_the_containers_limit_counts_less_its_use(monkeypatch, tmp_path):
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text("1000000\n")
    usage.write_text("250000\n")
    monkeypatch.setattr(memory, "_CGROUPS", ((str(limit), str(usage)),))
    assert memory._container_memory() == 750_000
    assert memory.available_memory() <= 750_000
    limit.write_text("max\n")
    assert memory._container_memory() is None


# -- chunk_size -----------------------------------------------------------------------------------
def test_chunk_size_gives_the_same_results_on_every_entry_point():
    x = np.linspace(0.1, 1.0, 23)
    f = lambda v: pj.sin(v) * v[::-1]                        # noqa: E731
    loss = lambda v: pj.sum(pj.sin(v) * v[::-1] ** 2)         # noqa: E731
    for chunk in (1, 5, 23, 40):
        np.testing.assert_allclose(pj.jacrev(f, chunk_size=chunk)(x), pj.jacrev(f)(x))
        np.testing.assert_allclose(pj.jacfwd(f, chunk_size=chunk)(x), pj.jacfwd(f)(x))
        np.testing.assert_allclose(pj.jacobian(f, x, chunk_size=chunk), pj.jacobian(f, x))
        np.testing.assert_allclose(pj.hessian(loss, x, chunk_size=chunk), pj.hessian(loss, x))
        np.testing.assert_allclose(pj.vectorized_map(lambda r: pj.sum(r * r), x[:, None] * x,
                                                     chunk_size=chunk),
                                   np.sum((x[:, None] * x) ** 2, axis=1))


def test_chunk_size_is_checked():
    with pytest.raises(ValueError, match="jacrev|jacobian: chunk_size must be a positive int"):
        pj.jacrev(pj.sin, chunk_size=0)(np.ones(3))
    with pytest.raises(ValueError, match="name the same thing; pass one of them"):
        pj.jacobian(pj.sin, np.ones(3), chunk_size=2, parallel_iterations=3)


# -- the progress bar ---------------------------------------------------------------------------
@pytest.fixture
def no_delay(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(progress, "DELAY", 0.0)


def test_a_jacobian_in_several_chunks_shows_a_bar(no_delay, capsys):
    x = np.linspace(0.0, 1.0, 40)
    pj.jacrev(_wide, chunk_size=10)(x)
    assert "jacobian:   0%|" in capsys.readouterr().err    # (left=False: cleared when done)
    pj.jacrev(_wide, chunk_size=10, progress=False)(x)
    pj.jacrev(_wide)(x)                                       # one chunk: no bar
    assert capsys.readouterr().err == ""


def test_a_bar_waits_for_its_delay(capsys):
    pytest.importorskip("tqdm")
    pj.jacrev(_wide, chunk_size=10)(np.linspace(0.0, 1.0, 40))  # well under 2 s
    assert capsys.readouterr().err == ""


def test_without_tqdm_there_is_no_bar_and_no_error(no_delay, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    x = np.linspace(0.0, 1.0, 40)
    np.testing.assert_allclose(pj.jacrev(_wide, chunk_size=10)(x), pj.jacrev(_wide)(x))
    assert capsys.readouterr().err == ""


def test_a_pass_chunked_to_fit_the_budget_shows_the_bar(no_delay, budget, capsys):
    budget("2MiB")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pj.jacrev(_wide)(np.linspace(0.0, 1.0, 120))
    assert "jacobian:   0%|" in capsys.readouterr().err
