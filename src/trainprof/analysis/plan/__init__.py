"""Planning before a run (`trainprof plan`): memory per GPU and time to train for any decoder
shape and layout, by formula. shape.py (the model's dimensions, from a preset, a Hugging
Face config.json or flags), layout.py (dp/tp/pp, ZeRO/FSDP, recompute, offload, precision,
optimizer, batch), memory.py (per-GPU bytes term by term), search.py (largest micro-batch,
the layouts that fit), time.py (time to train at an MFU). Pure arithmetic; within analysis/
it imports cost/ (the FLOPs of a GPT decoder) only.
"""
