"""Acme Formant TTS: a vendor's text-to-speech engine (``synth``) served as a VoxArena generator (``service``)."""
