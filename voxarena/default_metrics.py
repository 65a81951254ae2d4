"""The scorer metrics a run computes when its config names none.

One list for both sides of the contract: the scorer's registry (``scorers.registry``) and the
orchestrator's config default (``scorer.metrics``) read it from here, so the orchestrator needs no
scorer module to know it.
"""
from __future__ import annotations

DEFAULT_METRICS = ("wer", "cer", "sim", "rtf", "dnsmos", "pesq", "stoi", "psnr", "ssim", "ls_mse", "mcd")
