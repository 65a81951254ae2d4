"""Copy-me templates for a vendor's generator and detector (see README.md)."""
