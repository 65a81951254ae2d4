"""Fake-voice detector services, one package per detector."""
