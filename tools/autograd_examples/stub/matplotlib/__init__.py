"""A stand-in for matplotlib when autograd's examples run headless: every attribute is a
do-nothing object, and `pyplot.imread` reads the 8-bit PNGs the examples load."""
from __future__ import annotations


class _Dummy:
    def __call__(self, *args, **kwargs):
        return _Dummy()

    def __getattr__(self, name):
        return _Dummy()

    def __iter__(self):
        return iter([_Dummy(), _Dummy()])

    def __getitem__(self, key):
        return _Dummy()


def __getattr__(name):
    return _Dummy()
