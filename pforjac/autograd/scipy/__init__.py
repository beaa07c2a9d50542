"""`pforjac.autograd.scipy`: pforjac.scipy's modules under autograd's names."""
