"""Measurement: step timers, FLOP counting, device/peak facts. Talks to devices via backends."""
