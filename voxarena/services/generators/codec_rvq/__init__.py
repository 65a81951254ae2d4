"""codec-rvq: a SoundStream-style neural audio codec (encoder, residual VQ, decoder) trained here; RECONSTRUCT."""
