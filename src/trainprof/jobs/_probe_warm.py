"""Imported once by the memory probes' forkserver (a multiprocessing preload), never by
anything else: pays the trainer's imports and FlopCounterMode's first-use imports (~2 s
together) once, so each probe forked from the server starts warm. Only the meta device is
touched here (shapes, no data, no thread pool), which keeps forking safe."""

from trainprof.workload.config import TrainConfig
from trainprof.workload.trainer import count_model_flops

count_model_flops(TrainConfig(preset="tiny", micro_batch=1, seq_len=8).resolved())
