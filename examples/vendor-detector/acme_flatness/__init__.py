"""Acme Flatness: a vendor's fake-voice scorer (``cues``) served as a VoxArena detector (``service``)."""
