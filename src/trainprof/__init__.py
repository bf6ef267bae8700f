"""trainprof: make PyTorch training fast and show why it is slow.

The public API is small: `Monitor` for any training loop, the records it produces, and the
reference workload's config. Importing trainprof touches no device.
"""

from trainprof.errors import TrainprofError
from trainprof.monitor import Monitor
from trainprof.records import DeviceInfo, RunRecord, StepRecord, Summary

__version__ = "0.1.0"
__all__ = ["Monitor", "RunRecord", "StepRecord", "Summary", "DeviceInfo", "TrainprofError", "__version__"]
