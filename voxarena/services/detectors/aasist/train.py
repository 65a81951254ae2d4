"""aasist training (run by ``voxarena.services.detectors.training``)."""

from __future__ import annotations

from voxarena.services.detectors.training.torch_loop import TrainingPlan, raw_waveform_fit

# 2 s windows; the paper trains ~4 s crops with Adam 1e-4 for 100 epochs on 25k utterances.
PLAN = TrainingPlan(window=32000, max_epochs=10, patience=3, batch_size=16, learning_rate=1e-3)


def _net():
    from .network import Aasist

    return Aasist()


fit = raw_waveform_fit("aasist", _net, PLAN)
