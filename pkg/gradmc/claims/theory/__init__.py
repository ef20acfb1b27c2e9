"""Claims that read no metrics: exact computations on small models (``claims(config)``), computed by every claims
stage (:data:`gradmc.claims.base.THEORY`). A subpackage, so that no experiment is looked for under their names."""
