"""`trainprof run`: train the reference workload and measure every step."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import os
from pathlib import Path

from trainprof.errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from trainprof.workload.config import ATTENTIONS, DTYPES, OPTIMIZERS, PRESETS

    p = sub.add_parser("run", help="train the reference GPT workload and measure it",
                       description="Train the reference GPT workload (default: tiny preset on the "
                       "best device) and report step-time split, tokens/s, TFLOPS, MFU and HFU.")
    p.set_defaults(func=run)
    w = p.add_argument_group("workload")
    w.add_argument("--preset", default="tiny", help=f"model size: {', '.join(PRESETS)} (default tiny)")
    w.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    w.add_argument("--steps", type=int, default=80, help="optimizer steps (default 80)")
    w.add_argument("--micro-batch", type=int, help="sequences per forward (default: preset's)")
    w.add_argument("--seq-len", type=int, help="tokens per sequence (default: preset's context)")
    w.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step (default 1)")
    w.add_argument("--dtype", default="auto", help=f"{', '.join(DTYPES)} (default auto: bf16 on GPU, fp32 on CPU)")
    w.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False, help="torch.compile the model")
    w.add_argument("--optimizer", default="foreach", help=f"AdamW implementation: {', '.join(OPTIMIZERS)}")
    w.add_argument("--activation-checkpointing", action=argparse.BooleanOptionalAction, default=False)
    w.add_argument("--attention", default="sdpa", help=f"{', '.join(ATTENTIONS)} (default sdpa)")
    w.add_argument("--num-workers", type=int, default=0, help="DataLoader workers (default 0)")
    w.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=False)
    w.add_argument("--non-blocking", action=argparse.BooleanOptionalAction, default=False)
    w.add_argument("--pad-vocab", action=argparse.BooleanOptionalAction, default=False,
                   help="round the vocabulary up to a multiple of 64")
    w.add_argument("--lr", type=float, help="peak learning rate (default: preset's)")
    w.add_argument("--weight-decay", type=float, default=0.1)
    w.add_argument("--grad-clip", type=float, default=1.0)
    w.add_argument("--seed", type=int, default=1337)
    w.add_argument("--data", help="text file or folder (default: this Python's stdlib sources)")
    w.add_argument("--eval-batches", type=int, default=8, help="validation batches (default 8)")
    w.add_argument("--warmup-steps", type=int, default=2, help="steps left out of the summary (default 2)")
    w.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=False,
                   help="allow TF32 matmuls for fp32 on Ampere+ GPUs")
    w.add_argument("--gc-disable", action=argparse.BooleanOptionalAction, default=False,
                   help="disable Python's GC during steps (collect every 100 steps)")
    w.add_argument("--threads", type=int, help="intra-op CPU threads (default: PyTorch's)")
    w.add_argument("--data-delay-ms", type=float, default=0.0,
                   help="per-sample sleep in the dataset: simulate a slow input pipeline (default 0)")
    m = p.add_argument_group("peaks")
    m.add_argument("--peak-tflops", type=float, help="override the peak TFLOP/s used for MFU/HFU")
    m.add_argument("--peak-bandwidth-gbs", type=float, help="override the peak memory bandwidth (GB/s)")
    m.add_argument("--gpu-spec", help="use this spec-table row (see `trainprof specs`) for an unlisted GPU name")
    d = p.add_argument_group("distributed (torch.distributed, launched with torchrun)")
    d.add_argument("--nproc", type=int, default=1, help="ranks on this machine: runs torchrun --standalone "
                   "--nproc-per-node N -m trainprof run ... (default 1)")
    d.add_argument("--strategy", default="ddp", help="data parallelism when on several ranks: ddp or fsdp (default ddp)")
    d.add_argument("--bind-numa", action="store_true",
                   help="bind each rank to the cores of its NUMA node (its GPU's; CPU ranks: split over the "
                   "nodes), disjoint between ranks; threads default to the rank's core count (see `trainprof numa`)")
    o = p.add_argument_group("output")
    o.add_argument("--out", help="output folder (default runs/<timestamp>); must not exist or be empty")
    o.add_argument("--json", action="store_true", help="print run.json to stdout instead of tables")
    o.add_argument("--rows", type=int, default=16, help="steps shown in the table (default 16)")
    o.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="checkpoint model, optimizer, step and RNG every N steps into --out (default: never)")
    o.add_argument("--force", action="store_true",
                   help="replace an existing non-empty --out (a plain run: once the new one is complete; "
                   "with --checkpoint-every: at the start)")
    o.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint; "
                   "refused if the configuration differs from the checkpoint's")
    o.add_argument("--resume-anyway", action="store_true",
                   help="with --resume: continue even though seed, batch, lr, dtype, ... differ from the checkpoint's")
    o.add_argument("--profile", action="store_true",
                   help="after the measured steps, record a torch.profiler trace of a few more "
                   "(DIR/trace.json.gz; not in the summary)")
    o.add_argument("--profile-steps", type=int, default=2, help="steps recorded with --profile (default 2)")
    o.add_argument("--with-stack", action="store_true", help="record Python call sites in the trace")
    o.add_argument("--memory-snapshot", nargs="?", type=int, const=2, default=0, metavar="N",
                   help="CUDA: after the measured steps, record allocation history over N more steps "
                   "(default 2): DIR/memory_snapshot.pickle for pytorch.org/memory_viz, and peak memory by "
                   "category and fragmentation in run.json")
    o.add_argument("--nsys-capture", action="store_true",
                   help="run the --profile-steps extra steps inside cudaProfilerStart/Stop for Nsight "
                   "Systems instead of torch.profiler (CUDA only; see `trainprof nsys-command`)")
    o.add_argument("--no-report", action="store_true", help="do not write report.html and report.md")
    o.add_argument("--system-interval", type=float, default=0.5, metavar="S",
                   help="sample CPU/GPU utilisation, memory, IO and power every S seconds in a "
                   "background thread (run.json \"system\"; default 0.5, 0 turns it off)")


def _out_dir(arg: str | None, force: bool = False) -> Path:
    if arg is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path("runs") / stamp
        n = 1
        while out.exists():
            n += 1
            out = Path("runs") / f"{stamp}-{n}"
        return out
    from trainprof import atomic

    return atomic.check_out(arg, force=force)


def _with_findings(rec, analysis: dict | None):  # noqa: ANN001, ANN201
    """Diagnose the run (its step split) together with its trace analysis, if any."""
    import dataclasses

    if analysis is not None:
        return dataclasses.replace(rec, findings=analysis["ranks"][0]["findings"])
    from trainprof.diagnose import diagnose_rank

    return dataclasses.replace(rec, findings=diagnose_rank(None, rec.to_dict()))


def _analyze_profile(stage: Path, rec) -> dict:  # noqa: ANN001
    """Analyse the trace just recorded (diagnosed together with the run's step split);
    write analysis.json and the roofline chart beside it."""
    from trainprof import atomic
    from trainprof.analyze import add_findings, analyze_paths
    from trainprof.cli.analyze import write_plots

    result = analyze_paths([str(stage / "trace.json.gz")], jobs=1)
    for r in result["ranks"]:
        r["file"] = "trace.json.gz"  # relative to the run folder, not the staging path
        add_findings(r, rec.to_dict())
    write_plots(result, stage)
    atomic.write_text(stage / "analysis.json", atomic.dumps(result) + "\n")
    return result


def _positive(name: str, v: float | None) -> None:
    if v is not None and not 0 < v < float("inf"):
        raise UsageError(f"{name} must be a finite number > 0, got {v}")


def _launch(args: argparse.Namespace, out: Path) -> int:
    """Relaunch this command on `--nproc` ranks with torchrun (cli/torchrun.py)."""
    from trainprof.cli.torchrun import relaunch, strip_flag

    rest = strip_flag(list(args.argv), "--nproc")
    rest = rest[rest.index("run") + 1:]
    if args.out is None:
        rest += ["--out", str(out)]
    return relaunch(["run", *rest], args.nproc, what="run")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainprof import atomic
    from trainprof.collect.profiler import ProfileConfig
    from trainprof.report.terminal import print_run
    from trainprof.workload.config import TrainConfig
    from trainprof.workload.trainer import train

    _positive("--peak-tflops", args.peak_tflops)
    _positive("--peak-bandwidth-gbs", args.peak_bandwidth_gbs)
    if args.system_interval < 0:
        raise UsageError(f"--system-interval must be ≥ 0 (0 turns sampling off), got {args.system_interval}")
    if args.rows < 1:
        raise UsageError(f"--rows must be ≥ 1, got {args.rows}")
    if args.nproc < 1:
        raise UsageError(f"--nproc must be ≥ 1, got {args.nproc}")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    main_rank = int(os.environ.get("RANK", "0")) == 0
    if args.profile and (args.nproc > 1 or world > 1):
        raise UsageError("--profile with several ranks is not supported yet: profile one rank "
                         "(torch.profiler per rank) and run `trainprof analyze DIR` on the traces")
    if args.resume:
        from trainprof.workload import checkpoint

        if not args.out or not checkpoint.exists(Path(args.out)):
            raise UsageError("--resume needs --out DIR of a run started with --checkpoint-every "
                             f"(no {checkpoint.NAME} in {args.out or 'an --out folder'})")
        out = Path(args.out)
    else:
        if args.resume_anyway:
            raise UsageError("--resume-anyway goes with --resume")
        out = _out_dir(args.out, args.force) if main_rank else Path(args.out or ".")
    cfg = TrainConfig(
        preset=args.preset, device=args.device, steps=args.steps, micro_batch=args.micro_batch,
        seq_len=args.seq_len, grad_accum=args.grad_accum, dtype=args.dtype, compile=args.compile,
        optimizer=args.optimizer, activation_checkpointing=args.activation_checkpointing,
        attention=args.attention, num_workers=args.num_workers, pin_memory=args.pin_memory,
        non_blocking=args.non_blocking, pad_vocab=args.pad_vocab, lr=args.lr,
        weight_decay=args.weight_decay, grad_clip=args.grad_clip, seed=args.seed, data=args.data,
        eval_batches=args.eval_batches, warmup_steps=args.warmup_steps, data_delay_ms=args.data_delay_ms,
        strategy=args.strategy, tf32=args.tf32, gc_disable=args.gc_disable, threads=args.threads,
        checkpoint_every=args.checkpoint_every, bind_numa=args.bind_numa,
    ).resolved()
    if cfg.checkpoint_every and cfg.strategy == "fsdp" and (args.nproc > 1 or world > 1):
        raise UsageError("--checkpoint-every with --strategy fsdp is not supported yet (sharded state); use ddp")
    if args.nproc > 1 and world == 1:
        # Fail fast, before starting ranks, on what the parent can check.
        from trainprof.backends import resolve_device
        from trainprof.errors import InputError

        resolve_device(cfg.device)
        if cfg.bind_numa:  # a plan that cannot work (more ranks than cores) fails here, not in every rank
            from trainprof.errors import ResourceError
            from trainprof.workload.affinity import plan

            try:
                plan(cfg.device, args.nproc)
            except ResourceError as e:
                raise ResourceError(f"--bind-numa --nproc {args.nproc}: {e}") from None
        if cfg.data is not None and not Path(cfg.data).exists():
            raise InputError(f"--data {cfg.data}: no such file or folder")
        return _launch(args, out)
    if not main_rank:
        train(cfg, peak_tflops=args.peak_tflops, peak_bandwidth_gbs=args.peak_bandwidth_gbs, gpu_spec=args.gpu_spec,
              system_interval_s=args.system_interval or None)
        return 0  # rank 0 reports for the job

    err = Console(stderr=True)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("[bold]train[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=err, transient=True,
    )
    task = progress.add_task(f"{cfg.preset}", total=cfg.steps, info="")

    def on_step(r):  # noqa: ANN001
        # Started at the first step, so a setup error prints one clean line, no bar debris.
        if not progress.live.is_started:
            progress.start()
        progress.update(task, advance=1,
                        info=f"loss {r.loss:.3f}  {r.step_time_s * 1e3:,.0f} ms/step" if r.loss is not None else "")

    if args.profile_steps < 1:
        raise UsageError(f"--profile-steps must be ≥ 1, got {args.profile_steps}")
    if args.memory_snapshot < 0:
        raise UsageError(f"--memory-snapshot N must be ≥ 1 (0: off), got {args.memory_snapshot}")
    if args.nsys_capture and args.profile:
        raise UsageError("--nsys-capture replaces --profile (torch.profiler and Nsight Systems both "
                         "need CUPTI): pass one of them")
    if args.memory_snapshot or args.nsys_capture:
        from trainprof.backends import resolve_device

        dev = resolve_device(cfg.device)
        if args.memory_snapshot and not dev.startswith("cuda"):
            raise UsageError("--memory-snapshot needs CUDA (it records the CUDA caching allocator's history); "
                             f"this run is on {dev}: use `trainprof memory` for a CPU breakdown")
        if args.nsys_capture and not dev.startswith("cuda"):
            raise UsageError(f"--nsys-capture needs a CUDA device (Nsight Systems traces GPU work); "
                             f"this run is on {dev}")
    if args.nsys_capture:
        profile = ProfileConfig(active=args.profile_steps, tool="nsys")
    else:
        profile = ProfileConfig(active=args.profile_steps, with_stack=args.with_stack) if args.profile else None
    # A checkpointed or resumed run keeps its folder from the start (checkpoints and the
    # journal must survive a crash); any other run appears only when complete.
    persistent = args.resume or cfg.checkpoint_every > 0
    if persistent:
        if args.force and not args.resume:
            atomic.clear_for_force(out)
        atomic.clean_stale(out)  # a killed run's temp files (.checkpoint.pt.<pid>.*.tmp)
        out.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext(out) if persistent else atomic.staged_dir(out, force=args.force) as stage:
        try:
            rec = train(cfg, peak_tflops=args.peak_tflops, peak_bandwidth_gbs=args.peak_bandwidth_gbs,
                        gpu_spec=args.gpu_spec, on_step=on_step, profile=profile,
                        trace_path=stage / "trace.json.gz", run_dir=stage, resume=args.resume,
                        resume_anyway=args.resume_anyway,
                        system_interval_s=args.system_interval or None,
                        memory_snapshot_steps=args.memory_snapshot)
        finally:
            if progress.live.is_started:  # stop() on a never-started bar still prints a newline
                progress.stop()
        analysis = _analyze_profile(stage, rec) if args.profile else None
        rec = _with_findings(rec, analysis)
        atomic.write_text(stage / "run.json", rec.to_json())
        from trainprof.cli.report import auto_report

        report_note = auto_report(stage, args, shown_as=out)  # inside the folder before it appears
    if args.json:
        print(atomic.dumps(rec.to_dict()))
    else:
        con = Console()
        print_run(rec, con, max_rows=args.rows)
        if analysis is not None:
            from trainprof.report.analysis_terminal import print_analysis

            from trainprof.report.analysis_terminal import roofline_table

            con.print("\n[bold]Profiled steps[/] (trace.json.gz, analysed)")
            print_analysis(analysis, con)
            # The seed experiment in one table: the five most expensive ops on the roofline.
            rank = analysis["ranks"][0]
            if rank["roofline_points"]:
                con.print(roofline_table(rank, k=5))
        from trainprof.diagnose.engine import principal
        from trainprof.report.findings_terminal import print_findings

        print_findings(rec.findings, con, principal(rec.findings, analysis["ranks"][0] if analysis else None,
                                                    rec.to_dict()))
        con.print(f"wrote {out / 'run.json'}" + (f", {out / 'trace.json.gz'} and {out / 'analysis.json'}"
                                                  if args.profile else ""))
        if report_note:
            con.print(report_note, markup=False, soft_wrap=True)
    return 0
