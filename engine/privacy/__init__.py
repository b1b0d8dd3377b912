"""Privacy accounting and noise: the accountant, zCDP, the Gaussian noise, private bounds, risk figures."""
