import pforjac.autograd.numpy as np
from pforjac.autograd import elementwise_grad as egrad


def tanh(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-2 * x))


def main():
    x = np.linspace(-3.0, 3.0, 7)
    d1 = egrad(tanh)
    d2 = egrad(d1)
    d3 = egrad(d2)
    d4 = egrad(d3)
    return {"d1": d1(x), "d2": d2(x), "d3": d3(x), "d4": d4(x)}
