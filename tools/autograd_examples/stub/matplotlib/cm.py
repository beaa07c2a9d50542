from matplotlib import _Dummy, __getattr__  # noqa: F401
