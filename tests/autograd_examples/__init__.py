"""Small programs in autograd's style (their own code, not autograd's examples) that use
autograd's API through `pforjac.autograd`. Each has `main() -> dict` of results;
tests/data/make_autograd_examples.py runs the same files with `import autograd` to store
autograd's values, and tests/test_autograd_api.py compares."""
EXAMPLES = ["logistic_regression", "tanh_derivatives", "rosenbrock", "neural_net",
            "define_gradient", "fixed_points", "operators"]
