"""Renderers only: records in, text out. No computation, no device access."""
