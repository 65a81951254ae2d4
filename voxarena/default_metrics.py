"""The scorer metrics' facts both sides of the contract need without loading a metric.

- ``DEFAULT_METRICS``: the metrics a run computes when its config names none (the orchestrator's
  ``scorer.metrics`` default).
- ``HIGHER_IS_BETTER``: every registered metric's direction. The scorer's metric classes take theirs
  from here (``voxarena.scorers.registry.Metric``; GetInfo reports it as ``MetricSpec.higher_is_better``), and
  the statistics core's composite scores read it here, so the offline commands need no scorer.
"""

from __future__ import annotations

DEFAULT_METRICS = ("wer", "cer", "sim", "rtf", "dnsmos", "pesq", "stoi", "psnr", "ssim", "ls_mse", "mcd")

# Metric name -> True when a larger value is better; a metric's extra columns (stoi's estoi, dnsmos's
# sub-scores) share its direction.
HIGHER_IS_BETTER: dict[str, bool] = {
    "wer": False,
    "cer": False,
    "wer_pocketsphinx": False,  # error rates
    "rtf": False,  # seconds of compute per second of audio
    "ls_mse": False,
    "mcd": False,  # distances to the reference
    "sim": True,
    "cloneval": True,  # similarities to the speaker reference
    "dnsmos": True,
    "mos_distill": True,  # predicted MOS
    "pesq": True,
    "stoi": True,
    "psnr": True,
    "ssim": True,  # fidelity to the reference
}
