"""AIM: adaptive selection and measurement of marginals."""
