# Names vulture (the dead-code pass in .ci/run, --min-confidence 60) cannot see used: each is read by
# name from outside our code (a framework, msgspec, pytest, a C extension) or set for a library to read.
# Policy (docs/architecture.md, "Hygiene"): a report is either removed as dead or listed here with its
# reason; vulture matches names, not places, so one entry covers every use of the name.
# ruff: noqa
_ = object()

# -- modules' own hooks ------------------------------------------------------------------------------
__getattr__  # PEP 562: trainprof/__init__.py and hardware/__init__.py import their public names lazily
__dir__  # PEP 562: lists those lazy names for dir() and completion
_.__loader__  # inject/startup.py: the real loader, set on the module for importlib.resources & co.

# -- vocabularies: the values a field may hold, cited by its `# one of X` comment (#44 item 1 checks them)
BOTTLENECKS  # diagnose/finding.py: Finding.bottleneck, and step_split's phase -> class table
ANCHORS  # trace/iterations.py: Iteration.anchor
EDGE_TYPES  # analysis/graph/edge_kinds.py: the names of E_CPU..E_JOIN, re-exported by depgraph

# -- torch calls these by keyword / reads these attributes -------------------------------------------
out_shape  # collect/flops.py: torch's flop_counter passes out_shape= to every registered formula
grad_out_shape  # collect/flops.py: the first positional argument of a backward formula, by torch's signature
_.step_num  # collect/profiler.py: torch.profiler.profile reads it to number ProfilerStep#N
_.on_trace_ready  # inject/window.py: torch.profiler.profile calls it when a trace is ready

# -- finding rules: registered by @rule (diagnose/registry.py) and run from the registry by the engine --
busy_but_slow  # diagnose/flowchart.py
contended_machine  # diagnose/rules.py

# -- framework callbacks (transformers.TrainerCallback, lightning.Callback) --------------------------
_.on_train_begin  # HF
_.on_train_end  # HF and Lightning
_.on_step_begin  # HF
_.on_pre_optimizer_step  # HF
_.on_optimizer_step  # HF
_.on_step_end  # HF
_.on_log  # HF
control  # HF: every callback hook's third argument (TrainerControl), passed positionally
_.on_train_start  # Lightning
_.on_train_batch_start  # Lightning
_.on_train_batch_end  # Lightning
_.on_before_backward  # Lightning
_.on_after_backward  # Lightning
_.on_before_optimizer_step  # Lightning
batch_idx  # Lightning: the hooks' and training_step's argument, passed positionally
_.training_step  # Lightning: a LightningModule's step (tests' and profile_scripts' modules)
_.configure_optimizers  # Lightning: a LightningModule's optimizers
_.last_metrics  # integrations: the callbacks' last logged metrics, for the user's own code

# -- third-party objects configured by attribute ---------------------------------------------------
_.log_errors  # re2.Options (namematch.py, userregex.py)
_.case_sensitive  # re2.Options
_.max_mem  # re2.Options
_.writeable  # numpy: arr.flags.writeable = False, columns made read-only
_.caption  # rich.table.Table
_.caption_justify  # rich.table.Table
_.no_wrap  # rich.table.Column
_.overflow  # rich.table.Column
_._index  # rich.table.Column: its position, which rich reads when it lays out a table (report/fit.py)

# -- msgspec / dataclass fields: encoded to JSON (run.json, analysis.json, ...) or decoded by name ----
# records: every field is part of the file's contract (written, re-read, shown by templates by name)
duration_s  # collect/run_journal.py
session_spent_s  # jobs/study_journal.py
passed  # recordtypes/flowchart.py: ChartTest, shown by the reports
planned_device  # recordtypes/memory.py: a memory rung's planned device, read by report.html.j2 and written by jobs/memory_study.py
spec_assumed  # recordtypes/analysis.py
l2_flush_bytes  # recordtypes/bench.py
memory_budget_bytes  # recordtypes/bench.py
aggregate_busbw_gbs  # recordtypes/collectives.py
alignment  # recordtypes/collectives.py
clipped_waits  # recordtypes/collectives.py
end_skew_us  # recordtypes/collectives.py
exposed_share_pct  # recordtypes/collectives.py
last_rank  # recordtypes/collectives.py
per_step_pct  # recordtypes/collectives.py
straggler_share_pct  # recordtypes/collectives.py
added  # recordtypes/diff.py
lost_pct  # recordtypes/ettr.py
cpu_threads  # recordtypes/graph.py
dropped_edges  # recordtypes/graph.py
estimates_us  # recordtypes/graph.py
graph_launch_kernels  # recordtypes/graph.py
segments_merged  # recordtypes/graph.py
sync_edges  # recordtypes/graph.py
wait_edges  # recordtypes/graph.py
activations_bytes  # recordtypes/memory.py
available_bytes  # recordtypes/memory.py
cpu_malloc  # recordtypes/memory.py
fits_limit  # recordtypes/memory.py
grads_bytes  # recordtypes/memory.py
logits_bytes  # recordtypes/memory.py
measured_over_analytic  # recordtypes/memory.py
memory_limit_bytes  # recordtypes/memory.py
optimizer_bytes  # recordtypes/memory.py
params_bytes  # recordtypes/memory.py
calls_per_step  # recordtypes/modules.py
input_types  # recordtypes/roofline.py
applies  # recordtypes/study.py
base_step_s  # recordtypes/study.py
base_tokens_per_step  # recordtypes/study.py
base_us_per_token  # recordtypes/study.py
budget_note  # recordtypes/study.py
config_changes  # recordtypes/study.py
cpu_util_pct  # recordtypes/study.py
load_avg_1m  # recordtypes/study.py
new_step_s  # recordtypes/study.py
new_tokens_per_s  # recordtypes/study.py
new_tokens_per_step  # recordtypes/study.py
new_us_per_token  # recordtypes/study.py
queued_batches  # recordtypes/study.py
allocator_pct  # recordtypes/timeline.py
copy_us  # recordtypes/timeline.py
cpu_launch  # recordtypes/timeline.py
eager_time_kind  # recordtypes/timeline.py
exposed_per_step_us  # recordtypes/timeline.py
gpu_events  # recordtypes/timeline.py
host_launch_pct  # recordtypes/timeline.py
linked_pct  # recordtypes/timeline.py
memcpy_pct  # recordtypes/timeline.py
memcpy_us  # recordtypes/timeline.py
memset_pct  # recordtypes/timeline.py
memset_us  # recordtypes/timeline.py
other_pct  # recordtypes/timeline.py
overlap_us  # recordtypes/timeline.py
p95_us  # recordtypes/timeline.py
short_kernel_time_pct  # recordtypes/timeline.py
tensor_core_us  # recordtypes/timeline.py
unattributed_pct  # recordtypes/timeline.py
baseline_data_s  # recordtypes/tune.py
loss_reference  # recordtypes/tune.py
loss_scale  # recordtypes/tune.py
seed_trajectory_noise  # recordtypes/tune.py
seed_val_noise  # recordtypes/tune.py
single_seed  # recordtypes/tune.py
# recordtypes/system.py: run.json's "system" block, written by the sampler's summary; Energy's
# per-part fields are read as Energy.part(part, field) (getattr), the GPU's by name in report.html.j2
gpu_source  # Energy.part
gpu_coverage  # written: the share of the window the readings cover (docs/system.md)
gpu_power_integral_j  # written beside the counter as its cross-check
gpu_unavailable  # Energy.part
gpu_note  # Energy.part
cpu_coverage  # written
cpu_source  # Energy.part
cpu_unavailable  # Energy.part
cpu_j_per_step  # Energy.part
energy_j  # GpuSummary: written
energy_counter_j  # GpuSummary: written
mem_util_pct_mean  # GpuSummary: written
mem_util_pct_max  # GpuSummary: written
# recordtypes/run_parts.py: run.json's other blocks, written by their collectors and shown by name
peak_time_us  # SnapshotCategories: written (memory_snapshot.peak_by_category)
free_bytes  # Fragmentation: written
largest_free_block_bytes  # Fragmentation: written
peak_reserved_bytes  # AllocatorPeaks: written (torch.cuda.memory_stats)
peak_allocated_bytes  # AllocatorPeaks: written
num_alloc_retries  # AllocatorPeaks: written
num_ooms  # AllocatorPeaks: written
peak_unused_reserved_fraction  # AllocatorPeaks: written
allocator  # MemorySnapshot: written
viewer  # MemorySnapshot: written (where the pickle opens)
cpu_affinity  # RankRow: written (workload/affinity.environment)
numa_binding  # RankRow: written
global_batch_tokens  # Distributed: written
ranks_recorded  # Distributed: written by `profile`
flops_check_step  # Profile: read as Profile.value("flops_check_step") (profile_terminal.py)
process_group_backend  # Profile: read as Profile.value("process_group_backend") (profile_records.job_view)
dtype_from  # Profile: read by report.md's method.md.j2 and Profile.value
backward_passes_per_step  # Profile: Profile.value, method.md.j2
micro_batches_per_step  # Profile: Profile.value
profiled_step_time_s  # Profile: written (inject/window._window_stats)
profiler_overhead_pct  # Profile: Profile.value
sm_clock_mhz_max  # GpuSummary: written
util_pct_max  # GpuSummary: written
max_threads_per_sm  # trace/tables.py: Device, the trace's deviceProperties as parsed (Trace.devices)
# trace/schema.py: Kineto's JSON keys, decoded by msgspec; the column builder and the C scanner read
# Args' fields by name (msgspec.structs.fields, _scan.c's column list), TopLevel's through getattr
python_id  # Args "Python id", and the Trace column of that name
external_id_legacy  # Args "external id" (pre-2022 Kineto)
input_dims_legacy  # Args "Input dims"
input_type  # Args "Input type"
input_strides  # Args "Input Strides"
concrete_inputs  # Args "Concrete Inputs"
shared_memory  # Args "shared memory"
deviceProperties  # TopLevel
distributedInfo  # TopLevel
trainprof_mesh  # TopLevel
displayTimeUnit  # TopLevel
baseTimeNanoseconds  # TopLevel
schemaVersion  # TopLevel
cupti_version  # TopLevel, VERSION_FIELDS
cuda_runtime_version  # TopLevel, VERSION_FIELDS
cuda_driver_version  # TopLevel, VERSION_FIELDS
hip_runtime_version  # TopLevel, VERSION_FIELDS
hip_driver_version  # TopLevel, VERSION_FIELDS
roctracer_version  # TopLevel, VERSION_FIELDS

# -- report views: fields read by report.html's template (report/view_table.py) -------------------------
_.br  # Cell.br: the `table` macro writes a line break before the cell
ops_change  # DiffView: the change column of the operators' table (report.html, report.md, diff.md)
kernels_change  # DiffView: the same for the kernels' table
hint_bad  # view_profile.Roofline: the hint shown as a warning (report.html's Profile section)
cpu_roofs  # view_profile.Roofline: the warning that the roofs are this machine's CPU's
chart_ids  # ProfileView: the profile's chart ids, placed by report.html's template
idle_note  # ProfileView: the idle chart's note
idle_more  # ProfileView: the idle chart's further notes (host syncs, communication)
cpu_only  # ProfileView: the CPU-only note
modules_note  # ProfileView: the modules table's note
stacks_note  # ProfileView: the host stacks table's note
no_shapes  # ProfileView: the note that the trace has no input shapes
critical_title  # ProfileView: the critical path's heading
critical  # ProfileView: the critical path's table
path_note  # ProfileView: the ops on the whole trace's path
whatif_title  # ProfileView: the what-if's heading

# -- pytest ----------------------------------------------------------------------------------------
pytestmark  # a module's marks, read by pytest
pytest_configure  # tests/conftest.py hook
pytest_collection_modifyitems  # tests/conftest.py hook
collect_ignore  # tests/conftest.py: pytest reads it (paths a conftest keeps out of collection)
_isolated_cache  # tests/conftest.py: an autouse fixture
_strict  # tests/integration/test_collectives_planted.py: an autouse fixture
_no_torch  # tests/unit/test_forked.py: an autouse fixture
no_cpu_benchmark  # tests/integration/test_device_identity.py: a fixture, taken by name as a parameter
fake_cpu  # tests/unit/backends/test_cpu_peak.py: a fixture, taken by name
one_thread  # tests/unit/bench/test_bench_matmul.py: a fixture, taken by name
handlers  # tests/unit/cli/test_sigterm_handler.py: a fixture (saves and restores the signal handlers), taken by name
worker_id  # workload/data.py quiet_sigterm: DataLoader's worker_init_fn(worker_id) signature
num_returns  # tests/integration/test_hardening_cli.py: a fake ray.wait, by ray.wait's keyword
inputs  # tests/integration/test_integrations.py: a loss_fn's second argument, by the callback's signature

# -- standard-library callbacks in tests --------------------------------------------------------------
protocol_version  # http.server.BaseHTTPRequestHandler (test_http_sources.py)
_.log_message  # BaseHTTPRequestHandler
_.do_GET  # BaseHTTPRequestHandler
_.do_HEAD  # BaseHTTPRequestHandler
_.daemon_threads  # socketserver.ThreadingMixIn
_.handle_starttag  # html.parser.HTMLParser (report_fixtures.py)
_.handle_startendtag  # HTMLParser
_.handle_endtag  # HTMLParser
_.handle_data  # HTMLParser
