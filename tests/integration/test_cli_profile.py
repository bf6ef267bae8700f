"""`trainprof profile -- COMMAND`: real training programs (tests/integration/profile_scripts/),
run unchanged with the agent inside.

For each: the steps are counted right (which were warm-up, measured, profiled; backward
passes and micro-batches per step; tokens or samples per step), the FLOPs equal
FlopCounterMode run by hand on one step of the same model and shapes, the program's own
output and exit code are what they are without trainprof, and the folder holds what it
should. The parent runs in this process (`main`), the program in a child: capfd sees both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import runpy
import signal
import sys
import time
from pathlib import Path

import pytest
import torch

from trainprof.cli import main
from trainprof.collect.flops import count_flops

SCRIPTS = Path(__file__).parent / "profile_scripts"
# warm-up steps 0-1 (step 1 FLOP-counted), measured 2-4, torch.profiler on 5-7 (7 recorded)
FAST = ["--warmup", "2", "--steps", "3", "--profile-steps", "1", "--system-interval", "0"]
COMPLETE = {"run.json", "trace.json.gz", "analysis.json", "report.html", "report.md"}


def _profile(tmp_path: Path, capfd, script: str, *args: str, opts: tuple = (), name: str = "prof"):  # noqa: ANN001
    out = tmp_path / name
    rc = main(["profile", *FAST, *opts, "--out", str(out), "--", sys.executable, str(SCRIPTS / script), *args])
    cap = capfd.readouterr()
    return rc, out, cap.out, cap.err


def _bare(capfd, script: str, *args: str) -> tuple[int, str]:  # noqa: ANN001
    """(exit code, stdout) of the script without trainprof, run here as `python SCRIPT` runs it
    (runpy, __main__): the same code, seeds and threads print the same bytes, without the
    ~1 s of a second Python start and torch import. An uncaught exception is exit code 1."""
    threads, argv = torch.get_num_threads(), sys.argv
    sys.argv = [str(SCRIPTS / script), *args]
    rc = 0
    try:
        runpy.run_path(str(SCRIPTS / script), run_name="__main__")
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except Exception:  # noqa: BLE001 - the crash test's planted failure
        rc = 1
    finally:
        sys.argv = argv
        torch.set_num_threads(threads)
    return rc, capfd.readouterr().out


def _script(name: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(f"profile_script_{name}", SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


def _close(counted: float, by_hand: float) -> bool:
    return abs(counted - by_hand) <= 0.01 * by_hand


@pytest.mark.slow  # runs the user's program in fresh processes
def test_mlp_loop_runs_unchanged_and_is_measured(tmp_path, capfd):
    bare_rc, bare_out = _bare(capfd, "mlp_loop.py")
    rc, out, stdout, stderr = _profile(tmp_path, capfd, "mlp_loop.py")
    assert rc == bare_rc == 0
    assert stdout == bare_out  # the program's output, byte for byte (same losses: nothing changed its maths)
    assert COMPLETE <= {p.name for p in out.iterdir()}
    run = _run(out)
    assert run["status"] == "completed" and run["exit_code"] == 0
    assert run["command"] == [sys.executable, str(SCRIPTS / "mlp_loop.py")]
    p = run["profile"]
    assert [s["step"] for s in run["steps"]] == [2, 3, 4] and p["measured_steps"] == [2, 4]
    assert p["flops_step"] == 1 and p["profiled_steps"] == [7, 7] and p["window_complete"]
    assert p["boundary"] == "optimizer.step() of AdamW" and p["root_modules"] == ["Sequential"]
    assert p["backward_passes_per_step"] == 1 == p["micro_batches_per_step"]
    # float features: samples, the leading dimension of the first input (16, 32)
    assert p["batch_unit"] == "samples" and p["batch_shape"] == [16, 32]
    assert all(s["tokens"] == 16 for s in run["steps"])
    # FLOPs of one step: Linear 32→64 and 64→4 on 16 rows, forward 2·16·(32·64 + 64·4) = 73,728;
    # backward: both weight grads (73,728) + layer 2's input grad (2·16·64·4 = 8,192) = 81,920
    m = _script("mlp_loop")
    model, (x, y) = m.build(), m.batch()
    by_hand, _ = count_flops(lambda: torch.nn.functional.cross_entropy(model(x), y).backward())
    assert by_hand == 73_728 + 81_920
    assert _close(run["summary"]["flops_per_step"], by_hand)
    assert run["summary"]["mfu"] is not None and run["summary"]["mfu"] > 0
    for s in run["steps"]:  # the split adds up to the step (CPU: one clock)
        parts = s["data_s"] + s["h2d_s"] + s["forward_s"] + s["backward_s"] + s["optimizer_s"] + s["other_s"]
        assert parts == pytest.approx(s["step_time_s"], rel=1e-6)
        assert s["forward_s"] > 0 and s["backward_s"] > 0 and s["optimizer_s"] > 0
    a = json.loads((out / "analysis.json").read_text())
    assert [r["file"] for r in a["ranks"]] == ["trace.json.gz"] and a["ranks"][0]["steps"] == 1
    # the trace names the program's step 7, as profiled_steps does (torch.profiler counted it 2)
    assert [s["step"] for s in a["ranks"][0]["critical_path"]["steps"]] == [7]
    assert "Profile" in stderr and "optimizer.step() of AdamW" in stderr
    # the folder's manifest lists everything in it, what the program's end rewrote included:
    # --force would replace exactly this (owned.py)
    from trainprof import owned

    files, _ = owned.read(out)
    assert {"run.json", "trace.json.gz", "analysis.json", "report.md", "report.html"} <= files
    owned.check_removable(out)


@pytest.mark.slow  # runs the user's program in fresh processes
def test_transformer_loop_and_gradient_accumulation_then_diff(tmp_path, capfd):
    rc, plain, stdout, _ = _profile(tmp_path, capfd, "transformer_loop.py", opts=("--stop-after",), name="plain")
    assert rc == 0 and stdout == ""  # --stop-after: stopped (exit 0) once the window was recorded, before "done"
    run = _run(plain)
    assert run["status"] == "stopped" and run["profile"]["window_complete"]
    assert run["profile"]["backward_passes_per_step"] == 1 and run["profile"]["batch_unit"] == "tokens"
    assert run["summary"]["tokens_per_step"] == 4 * 16  # token ids (4, 16): every element
    m = _script("transformer_loop")
    model, (x, y) = m.build(), m.batch()
    one, _ = count_flops(lambda: torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward())
    assert _close(run["summary"]["flops_per_step"], one)

    bare_rc, bare_out = _bare(capfd, "transformer_loop.py", "--accum", "3")
    rc, accum, stdout, _ = _profile(tmp_path, capfd, "transformer_loop.py", "--accum", "3", name="accum")
    assert rc == bare_rc == 0 and stdout == bare_out and stdout.startswith("done: 10 steps of 3 micro-batches")
    run = _run(accum)
    p = run["profile"]
    # 3 micro-batches, 3 backward passes, one optimizer.step(): accumulation, and 3× the tokens and FLOPs
    assert p["backward_passes_per_step"] == 3 == p["micro_batches_per_step"] and run["config"]["grad_accum"] == 3
    assert all(s["tokens"] == 3 * 4 * 16 for s in run["steps"])
    assert _close(run["summary"]["flops_per_step"], 3 * one)

    assert main(["diff", str(plain), str(accum), "--json"]) == 0  # two profile folders: their traces
    d = json.loads(capfd.readouterr().out)
    assert d["base"]["file"].endswith("trace.json.gz") and d["new"]["file"].endswith("trace.json.gz")


@pytest.mark.slow  # runs the user's program in fresh processes
def test_crash_at_step_5_keeps_what_was_measured_and_its_exit_code(tmp_path, capfd):
    bare_rc, bare_out = _bare(capfd, "mlp_loop.py", "--raise-at", "5")
    rc, out, stdout, stderr = _profile(tmp_path, capfd, "mlp_loop.py", "--raise-at", "5")
    assert rc == bare_rc == 1 and stdout == bare_out and bare_out.count("\n") == 2  # steps 0 and 4 printed
    assert "RuntimeError: planted failure at step 5" in stderr  # the program's traceback, on its stderr
    run = _run(out)
    p = run["profile"]
    # steps 0-4 ran; 2-4 were measured; the profiler had started (step 5) when it crashed: no trace
    assert run["status"] == "crashed" and run["exit_code"] == 1
    assert p["steps_seen"] == 5 and [s["step"] for s in run["steps"]] == [2, 3, 4] and not p["window_complete"]
    assert {"run.json", "report.html", "report.md"} <= {f.name for f in out.iterdir()}
    assert not (out / "trace.json.gz").exists() and not (out / "analysis.json").exists()
    assert "before the window completed" in stderr
    assert run["summary"]["flops_per_step"] == 73_728 + 81_920  # the MLP's step, as counted by hand above


@pytest.mark.slow  # runs the user's program in fresh processes
def test_a_program_that_never_steps_is_told_the_fix(tmp_path, capfd):
    bare_rc, bare_out = _bare(capfd, "never_steps.py")
    rc, out, stdout, stderr = _profile(tmp_path, capfd, "never_steps.py")
    assert rc == bare_rc == 0 and stdout == bare_out
    assert "never called optimizer.step() (10 backward passes, 0 optimizer steps)" in stderr
    assert "--step-marker" in stderr
    assert not out.exists()  # nothing measured: no folder

    rc, out, stdout, _ = _profile(tmp_path, capfd, "never_steps.py", opts=("--step-marker", "never_steps:train_step"),
                                  name="marked")
    assert rc == 0 and stdout == bare_out
    run = _run(out)
    p = run["profile"]
    # the marker is wrapped during the first call (its backward): that call is step 0, unseen;
    # steps 1-2 warm up (2 counted), 3-5 are measured, 6-8 profiled; 9 boundaries of 10 calls seen
    assert p["boundary"] == "--step-marker never_steps:train_step" and p["flops_step"] == 2
    assert [s["step"] for s in run["steps"]] == [3, 4, 5] and p["steps_seen"] == 9
    # Linear(8→1) on 4 rows: forward 2·4·8·1 = 64; backward: the weight grad only (x needs none) = 64
    m = _script("never_steps")
    x = torch.randn(4, 8)
    by_hand, _ = count_flops(lambda: ((m.model(x) - 1) ** 2).mean().backward())
    assert by_hand == 128 and _close(run["summary"]["flops_per_step"], by_hand)


@pytest.mark.parametrize("argv, says", [
    (["profile"], "give the command after --"),
    (["profile", "--warmup", "1", "--", "true"], "profile.warmup (--warmup) must be ≥ 2"),
    (["profile", "--step-marker", "train.step", "--", "true"], "profile.step_marker (--step-marker) must be MODULE:QUALNAME"),
    (["profile", "--", "no-such-program-xyz"], "no-such-program-xyz: command not found"),
    (["profile", "--nproc", "2", "--", "torchrun", "--nproc-per-node", "2", "t.py"], "not both"),
])
def test_bad_input_is_one_line_and_runs_nothing(tmp_path, capfd, argv, says):
    assert main([*argv[:1], "--out", str(tmp_path / "o"), *argv[1:]]) == 2
    cap = capfd.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and says in cap.err
    assert not (tmp_path / "o").exists()


def test_a_non_empty_out_is_refused_before_the_program_runs(tmp_path, capfd):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep").write_text("x")
    flag = tmp_path / "ran"
    assert main(["profile", "--out", str(out), "--", sys.executable, "-c", f"open({str(flag)!r}, 'w')"]) == 2
    assert "exists and is not empty" in capfd.readouterr().err and not flag.exists()


@pytest.mark.slow
def test_hugging_face_trainer_with_accumulation(tmp_path, capfd):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    rc, out, stdout, _ = _profile(tmp_path, capfd, "hf_trainer.py", "--steps", "8", "--accum", "2",
                                  "--out", str(tmp_path / "hf"))
    assert rc == 0 and stdout.rstrip().endswith("hf done: 8 optimizer steps")
    assert COMPLETE <= {p.name for p in out.iterdir()}
    run = _run(out)
    p = run["profile"]
    assert p["boundary"] == "optimizer.step() of AdamW" and run["model"]["class"] == "GPT2LMHeadModel"
    assert [s["step"] for s in run["steps"]] == [2, 3, 4] and p["backward_passes_per_step"] == 2
    # input_ids (4, 16) as keyword arguments, 2 micro-batches per step
    assert run["summary"]["tokens_per_step"] == 2 * 4 * 16 and p["batch_unit"] == "tokens"
    transformers.logging.set_verbosity_error()
    m = _script("hf_trainer")
    model, batch = m.build(), m.batch()
    one, _ = count_flops(lambda: model(**batch).loss.backward())
    assert _close(run["summary"]["flops_per_step"], 2 * one)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
def test_lightning_fit_with_its_closure(tmp_path, capfd):
    pytest.importorskip("lightning.pytorch")
    rc, out, stdout, _ = _profile(tmp_path, capfd, "lightning_fit.py", "--steps", "8", "--out", str(tmp_path / "pl"))
    assert rc == 0 and stdout.rstrip().endswith("lightning done: 8 optimizer steps")
    assert COMPLETE <= {p.name for p in out.iterdir()}
    run = _run(out)
    assert [s["step"] for s in run["steps"]] == [2, 3, 4] and run["profile"]["backward_passes_per_step"] == 1
    # Lightning runs forward and backward inside optimizer.step(closure): the split still finds them
    for s in run["steps"]:
        assert s["forward_s"] > 0 and s["backward_s"] > 0 and s["optimizer_s"] > 0 and s["data_s"] > 0
    m = _script("lightning_fit")
    model, (x, y) = m.build(), m.batch()
    by_hand, _ = count_flops(lambda: torch.nn.functional.cross_entropy(model(x), y).backward())
    assert _close(run["summary"]["flops_per_step"], by_hand)


@pytest.mark.slow
def test_torchrun_ddp_on_two_ranks(tmp_path, capfd):
    out = tmp_path / "ddp"
    rc = main(["profile", *FAST, "--out", str(out), "--", sys.executable, "-m", "torch.distributed.run",
               "--standalone", "--nproc-per-node", "2", str(SCRIPTS / "ddp_gloo.py")])
    cap = capfd.readouterr()
    assert rc == 0, cap.err[-2000:]
    # the ranks share the terminal and may write at once ("...-0.869450rank 1 done...": torchrun's
    # workers, profiled or not): read the lines' contents, not their breaks
    done = sorted(re.findall(r"rank (\d) done: weights sum (-?[\d.]+)", cap.out))
    assert [r for r, _ in done] == ["0", "1"], cap.out
    assert done[0][1] == done[1][1]  # DDP kept the replicas equal
    assert {"run.json", "ranks", "traces", "analysis.json", "report.html", "report.md"} <= {p.name for p in out.iterdir()}
    assert sorted(p.name for p in (out / "traces").iterdir()) == ["rank0.json.gz", "rank1.json.gz"]
    run = _run(out)
    dist = run["distributed"]
    assert dist["world_size"] == 2 and dist["strategy"] == "ddp" and dist["backend"] == "gloo"
    assert [r["rank"] for r in dist["per_rank"]] == [0, 1]
    m = _script("ddp_gloo")
    model, (x, y) = m.build(), m.batch()
    by_hand, _ = count_flops(lambda: torch.nn.functional.cross_entropy(model(x), y).backward())
    for r in (0, 1):
        rank = json.loads((out / "ranks" / f"rank{r}.json").read_text())
        assert rank["profile"]["rank"] == r and [s["step"] for s in rank["steps"]] == [2, 3, 4]
        assert _close(rank["summary"]["flops_per_step"], by_hand)
    a = json.loads((out / "analysis.json").read_text())
    assert [r["rank"] for r in a["ranks"]] == [0, 1] and a["multi_rank"]["collectives"]["matched"] > 0


@pytest.mark.slow
def test_sigint_reaches_the_program_once_and_the_folder_keeps_its_status(tmp_path, capfd, monkeypatch):
    """A job that runs on after the window: the folder appears while it runs ("running"); a
    SIGINT to trainprof (here: this process) is passed on, since no terminal sent it to the
    program, the program stops with its own KeyboardInterrupt, and run.json records it."""
    import threading

    from trainprof.jobs import profile as job

    monkeypatch.setattr(job, "_terminal_foreground", lambda: False)  # as under a scheduler, whatever runs pytest
    # the window's folder is written at SCHED_IDLE while the program runs on (lowpriority.py): on a
    # loaded machine (two suites on 2 cores) it came only after the program's ~40 s had ended and
    # read "completed". This test is about the SIGINT, so the folder is written at normal priority
    # (tests/unit/inject/test_window_helpers.py covers the idle priority).
    monkeypatch.setattr(job, "idle_cpu", contextlib.nullcontext)
    out = tmp_path / "long"
    seen = {}

    def interrupt() -> None:
        deadline = time.monotonic() + 120
        while not (out / "run.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        seen["while_running"] = _run(out)
        os.kill(os.getpid(), signal.SIGINT)  # trainprof's handler is in place while it waits

    t = threading.Thread(target=interrupt)
    t.start()
    rc = main(["profile", *FAST, "--out", str(out), "--", sys.executable, str(SCRIPTS / "mlp_loop.py"),
               "--steps", "2000", "--step-sleep", "0.02"])
    t.join()
    err = capfd.readouterr().err
    assert seen["while_running"]["status"] == "running" and seen["while_running"]["exit_code"] is None
    assert rc == 130  # 128 + SIGINT: what a shell reports for the program itself
    assert err.count("KeyboardInterrupt") == 1
    run = _run(out)
    assert run["status"] == "interrupted" and run["exit_code"] == -signal.SIGINT
    # planted: the loop sleeps 20 ms after optimizer.step(), before its next batch: data wait
    # (from the end of one step to the first forward of the next) holds it, no other phase does
    assert all(s["data_s"] >= 0.02 for s in run["steps"])
