"""Run the Hugging Face audio-classifier detector service::

python -m voxarena.services.detectors.hf_audio_classifier --port N --model-dir DIR
    [--bonafide-label LABEL] [--calibration A,B]
"""

from voxarena.sdk import serve

from .model import HfAudioClassifierModel


def _arguments(parser) -> None:
    parser.add_argument("--model-dir", default=None, help="saved checkpoint (default $VOXARENA_HF_MODEL_DIR)")
    parser.add_argument(
        "--bonafide-label",
        default=None,
        help="the model's label for bona fide speech (default $VOXARENA_HF_BONAFIDE_LABEL or 'bonafide')",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        metavar="A,B",
        help="serve LLR = A * score + B (fit A,B on your dev run: python -m voxarena.services.detectors.calibration)",
    )


if __name__ == "__main__":
    serve(
        lambda args: HfAudioClassifierModel(args.model_dir, args.bonafide_label, args.calibration),
        add_arguments=_arguments,
    )
