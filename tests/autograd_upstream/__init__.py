"""autograd's examples (MIT license, see LICENSE.txt), run by tests/test_autograd_examples.py."""
EXAMPLES = ["define_gradient", "dot_graph", "fixed_points", "negative_binomial_maxlike",
            "ode_net", "print_trace", "rkhs", "rnn", "rosenbrock"]
