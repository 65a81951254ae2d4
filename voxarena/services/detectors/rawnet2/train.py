"""rawnet2 training (run by ``voxarena.services.detectors.training``)."""

from __future__ import annotations

from voxarena.services.detectors.training.torch_loop import TrainingPlan, raw_waveform_fit

# 64600 samples (~4 s) per window as in the paper; Adam 1e-4 there on 25k utterances, 1e-3 here on ~700 clips.
PLAN = TrainingPlan(window=64600, max_epochs=10, patience=3, batch_size=16, learning_rate=1e-3)


def _net():
    from .network import RawNet2

    return RawNet2()


fit = raw_waveform_fit("rawnet2", _net, PLAN)
