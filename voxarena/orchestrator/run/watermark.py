"""A generator's watermark (``generators.NAME.watermark``): every clip it makes goes through a WATERMARK
transform before it is stored, as a vendor that marks its outputs ships them.

The marked clip is the generation's audio (what detectors, the scorer and the channel conditions get);
the unmarked one is stored too and the row's ``watermark`` records both (``transform``, ``steps``,
``unmarked_audio``, ``unmarked_sha256``, ``timing``), so the mark's perceptual cost can be measured
against it and nothing made is lost. A failed or invalid Transform fails the generation row, naming the
transform. A partial fake's generator output is marked before it is spliced (``partial_stage``): the row's
``unmarked_audio`` is then the generator's unmarked output, not the spliced clip.
"""

from __future__ import annotations

from google.protobuf import json_format

from voxarena.codec import AudioClip, clip_to_wav_bytes, encode_audio
from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.fleet.fleet import ServiceFleet
from voxarena.orchestrator.run.validation import ResponseInvalid, validate_transform
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.v1 import transform_pb2


class Watermark:
    def __init__(self, store: RunStore, fleet: ServiceFleet) -> None:
        self.store, self.fleet = store, fleet

    def __call__(self, row: GenerationRecord, clip: AudioClip, transform: str) -> AudioClip:
        """``clip`` marked by ``transform``; stores the unmarked clip and fills ``row.watermark``."""
        req = transform_pb2.TransformRequest(request_id=row.id, seed=row.seed, audio=encode_audio(clip))
        try:
            resp, _ = self.fleet[transform].call("Transform", req)
            marked = validate_transform(row.id, req, resp)
        except CallFailed as e:
            raise CallFailed(e.code, f"watermark {transform}: {e.details}", e.attempts) from None
        except ResponseInvalid as e:
            raise ResponseInvalid(f"watermark {transform}: {e}") from None
        if marked.sample_rate != clip.sample_rate:
            raise ResponseInvalid(
                f"{row.id}: watermark {transform}: answered {marked.sample_rate} Hz for a {clip.sample_rate} Hz clip"
            )
        rel, sha = self.store.put_audio(clip_to_wav_bytes(clip))
        row.watermark = {
            "transform": transform,
            "steps": list(resp.steps),
            "unmarked_audio": rel,
            "unmarked_sha256": sha,
            "timing": json_format.MessageToDict(resp.timing, preserving_proto_field_name=True),
        }
        return marked
