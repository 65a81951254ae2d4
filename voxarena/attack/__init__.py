"""Adaptive black-box attacks on detectors (issue 16 item 2): search, within a perceptual budget and a query
budget, for the version of a clip a detector scores most bona fide, from its scores alone.

``perturbation`` (the parameterisation and the budget), ``search`` (random search with an adaptive step),
``client`` (the ``score`` callable over a detector's ScoreBatch RPC). See README.md here.
"""

from .perturbation import AttackArgumentError, Budget, Candidate, Perturbation, snr_db
from .search import AttackQueryError, AttackResult, QueryRecord, SearchSettings, attack

__all__ = [
    "AttackArgumentError",
    "AttackQueryError",
    "AttackResult",
    "Budget",
    "Candidate",
    "Perturbation",
    "QueryRecord",
    "SearchSettings",
    "attack",
    "snr_db",
]
