"""Privacy accounting and noise: the accountant, zCDP, the Gaussian noise, private bounds, risk figures, and the ledger (the budget per dataset, booked in the run store)."""
