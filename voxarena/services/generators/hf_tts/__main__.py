"""Run the Hugging Face text-to-speech generator service::

python -m voxarena.services.generators.hf_tts --port N --model-dir DIR
    [--vocoder-dir DIR] [--speaker-embedding FILE.npy] [--voice-preset NAME] [--language TAG]
"""

from voxarena.sdk import serve

from .model import HfTtsModel


def _arguments(parser) -> None:
    parser.add_argument("--model-dir", default=None, help="saved checkpoint (default $VOXARENA_HF_TTS_MODEL_DIR)")
    parser.add_argument(
        "--vocoder-dir", default=None, help="SpeechT5: its HiFi-GAN vocoder (default MODEL_DIR/vocoder)"
    )
    parser.add_argument(
        "--speaker-embedding", default=None, help="SpeechT5: the speaker's x-vector, a .npy float vector"
    )
    parser.add_argument(
        "--voice-preset", default="", help="Bark: the default voice_preset option (e.g. v2/en_speaker_6)"
    )
    parser.add_argument("--language", default="en-US", help="the voice's language tag in GetInfo (default en-US)")


if __name__ == "__main__":
    serve(
        lambda args: HfTtsModel(
            args.model_dir, args.vocoder_dir, args.speaker_embedding, args.voice_preset, args.language
        ),
        add_arguments=_arguments,
    )
