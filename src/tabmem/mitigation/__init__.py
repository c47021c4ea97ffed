"""Remove memorization: training-data augmenters, rankings of training records, DynamicCut.

* Augmenters (one registry, one interface: ``get_augmenter(name, **params).fit(train, schema)
  .augment(n_new=None, ratio=0.3, random_state=None)`` -> new rows only): ``tabcutmix``,
  ``tabcutmix-plus``, ``smote``, ``mixup``, ``ijf``.
* Rankings (:mod:`~tabmem.mitigation.ranking`): ``intensity``, ``count``, ``first-memorization``,
  ``random``; saved and loaded with the training table's fingerprint (transfer across generators).
* :class:`MemorizationStopping`: a training callback that chooses the checkpoint (and may stop) by
  the tracked excess memorization over a selection holdout and a Shape floor (``tabmem train --stop-excess``).
* :class:`RejectionSampler`: sampling-time rejection of rows the replica criterion flags (``tabmem sample
  --reject-replicas``, ``tabmem reject``), and :func:`rejection_aware_scores`, the attacker who knows the rule.
* :class:`DynamicCut` (warm-up, rank, prune, retrain from scratch; ``mix=`` for DynamicCutMix) and
  :func:`mitigation_report` (memorization vs the original and the pruned table, holdout baseline,
  quality). The resumable directory run behind ``tabmem dynamiccut`` is
  :func:`tabmem.runs.dynamiccut.dynamiccut_to_dir`.
"""

from __future__ import annotations

from tabmem.mitigation.association import association_matrix, correlation_ratio, cramers_v, feature_clusters
from tabmem.mitigation.base import AUGMENTERS, Augmenter, augmented_table, get_augmenter, register_augmenter
from tabmem.mitigation.dynamiccut import DynamicCut, RetrainTable, check_dynamiccut, retrain_table
from tabmem.mitigation.evaluation import bootstrap_excess_ci, mitigation_report, quality_scores
from tabmem.mitigation.ranking import (
    RANKING_METHODS,
    Ranking,
    count_ranking,
    first_memorization_ranking,
    intensity_ranking,
    n_to_prune,
    random_ranking,
    rank_records,
)
from tabmem.mitigation.rejection import RejectionReport, RejectionSampler, rejection_aware_scores
from tabmem.mitigation.stopping import MemorizationStopping, choose_epoch, should_stop
from tabmem.mitigation.summary import DynamicCutSummary, MitigationReport, QualityScores

__all__ = [
    "AUGMENTERS",
    "Augmenter",
    "MemorizationStopping",
    "DynamicCut",
    "DynamicCutSummary",
    "MitigationReport",
    "QualityScores",
    "RANKING_METHODS",
    "Ranking",
    "RejectionReport",
    "RejectionSampler",
    "RetrainTable",
    "association_matrix",
    "augmented_table",
    "bootstrap_excess_ci",
    "check_dynamiccut",
    "choose_epoch",
    "correlation_ratio",
    "count_ranking",
    "cramers_v",
    "feature_clusters",
    "first_memorization_ranking",
    "get_augmenter",
    "intensity_ranking",
    "mitigation_report",
    "n_to_prune",
    "quality_scores",
    "random_ranking",
    "rank_records",
    "register_augmenter",
    "rejection_aware_scores",
    "retrain_table",
    "should_stop",
]
