"""One word for each thing (issue #44 item 1): the matmul ops, collective names, idle causes and
temporal parts live in src/trainprof/vocab/; a literal spelled again elsewhere is a drift
waiting to happen (the matmul list had drifted in 5 places), so this test reads every module's
string constants (AST, ~0.5 s) and fails on one.

Two checks per vocabulary:
* a DISTINCT word (`aten::addmm`, `all_reduce`, `host_launch`) may not appear as a string
  literal anywhere outside its module;
* a COMMON word (`compute`, `send`, `other`) means many things, so it is only caught in a
  list: a tuple/list/set/dict literal holding at least MIN_IN_LIST of the vocabulary's words
  (nested ones counted with their outermost literal) is the vocabulary spelled again.
Docstrings and prose never equal a word exactly, so they pass. Legitimate other uses are
listed in EXEMPT with the reason, by (file, scope): the module-level name assigned or the
top-level function/class the literal sits in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

from trainprof.vocab import collectives, idle, matmul, parts

PKG = Path(__file__).resolve().parents[2] / "src" / "trainprof"
REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"

# vocabulary -> (its module, words never spelled elsewhere, words caught in lists, MIN_IN_LIST)
VOCABS = {
    "matmul ops": ("vocab/matmul.py", set(matmul.MATMUL_OPS), set(), 0),
    "collective names": (
        "vocab/collectives.py",
        {
            collectives.ALL_REDUCE,
            collectives.ALL_GATHER,
            collectives.REDUCE_SCATTER,
            collectives.ALL_TO_ALL,
            collectives.SEND_RECV,
            *collectives.OLD_NAMES,
        },
        set(collectives.NAMES) - {collectives.OTHER},
        2,
    ),
    "idle causes": ("vocab/idle.py", {idle.HOST_LAUNCH, idle.UNATTRIBUTED}, set(idle.CAUSES) - {idle.OTHER}, 2),
    "temporal parts": ("vocab/parts.py", set(), set(parts.PARTS), 3),
}

# (file, scope, vocabulary): why that literal is another concept spelled alike
EXEMPT = {
    # the subcommand `bench allreduce` (and bench.json's kind): a name users type, not a collective
    **{
        (f, scope, "collective names"): "the subcommand `bench allreduce`"
        for f, scope in (
            ("bench/__init__.py", "KINDS"),
            ("bench/config.py", "KINDS"),
            ("bench/tables.py", "RENDERERS"),
            ("cli/bench.py", "HELP"),
            ("cli/bench.py", "_config"),
            ("cli/bench.py", "bench"),
            ("recordtypes/bench.py", "<module>"),
        )
    },
    # finding ids and what-if scenarios share three idle causes' words: other vocabularies
    ("analysis/graph/whatif.py", "REMOVABLE", "idle causes"): "the what-if scenarios `remove X`",
    ("analysis/graph/whatif.py", "edited_intrinsic", "idle causes"): "the what-if scenarios `remove X`",
    ("diagnose/host_stacks.py", "HOST_FINDINGS", "idle causes"): "finding ids",
    ("analysis/graph/edge_kinds.py", "SEG_KINDS", "idle causes"): "critical-path segment kinds",
    # kernel classes (trace/kernel_classes.toml) share the busy parts' words
    ("report/colours.py", "CLASS_COLOURS", "temporal parts"): "kernel classes' colours",
    # the per-rank comparison's columns (MultiRank.per_rank: compute_us, communication_us, idle_us)
    ("report/analysis_terminal.py", "_multi_rank", "temporal parts"): "per-rank table columns",
    ("report/charts.py", "ranks", "temporal parts"): "per-rank chart parts",
    # the optimizer block's own split (compute, communication, copy, idle)
    ("diagnose/optimizer_advice.py", "PARTS", "temporal parts"): "the optimizer step's parts",
}


def _scopes(tree: ast.Module):
    """(scope, node) for each top-level statement: the name it assigns or defines."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield stmt.name, stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            yield (target.id if isinstance(target, ast.Name) else "<module>"), stmt
        else:
            yield "<module>", stmt


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _outer_lists(node: ast.AST):
    """The outermost tuple/list/set/dict literals under `node`."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from _outer_lists(child)


def spellings(pkg: Path = PKG) -> dict[str, list[tuple[str, str, str]]]:
    """Per vocabulary: (file, scope, what) for each place outside its module that spells it."""
    found: dict[str, list[tuple[str, str, str]]] = {v: [] for v in VOCABS}
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg).as_posix()
        tree = ast.parse(f.read_text("utf-8"))
        for scope, stmt in _scopes(tree):
            words = _strings(stmt)
            lists = [set(_strings(n)) for n in _outer_lists(stmt)]
            for v, (home, distinct, common, least) in VOCABS.items():
                if rel == home:
                    continue
                hits = sorted({w for w in words if w in distinct})
                hits += [f"[{', '.join(sorted(s & common))}]" for s in lists if least and len(s & common) >= least]
                found[v] += [(rel, scope, h) for h in dict.fromkeys(hits)]
    return found


def test_each_vocabulary_is_spelled_in_its_module_only():
    found = spellings()
    loose = {
        v: [f"{rel}:{scope} {what}" for rel, scope, what in places if (rel, scope, v) not in EXEMPT]
        for v, places in found.items()
    }
    assert loose == {v: [] for v in VOCABS}, "import the word from trainprof.vocab (or add to EXEMPT, with why)"
    used = {(rel, scope, v) for v, places in found.items() for rel, scope, _ in places}
    assert set(EXEMPT) - used == set(), "an exemption no longer needed: remove it"


def test_the_scan_sees_a_respelled_word(tmp_path):
    # planted: the drift this test exists for, a matmul op and an idle-cause list spelled again
    (tmp_path / "vocab").mkdir()
    (tmp_path / "a.py").write_text(
        'GEMM = {"aten::_int_mm"}\n\n\ndef f(c):\n'
        '    return c in ("data_loading", "host_sync", "prose about aten::mm")\n'
    )
    found = spellings(tmp_path)
    assert found["matmul ops"] == [("a.py", "GEMM", "aten::_int_mm")]
    assert found["idle causes"] == [("a.py", "f", "[data_loading, host_sync]")]
    assert found["temporal parts"] == found["collective names"] == []


def test_every_tensor_core_matmul_op_is_priced():
    # the drift this vocabulary ended: ops counted as Tensor Core math but absent from the roofline
    from trainprof.analysis.cost.op_cost import OPS, family
    from trainprof.trace.tensor_core import MATMUL_POS

    assert set(MATMUL_POS) == set(matmul.MATMUL_OPS) <= set(OPS)
    assert {family(n) for n in matmul.MATMUL_OPS} == {"matmul"}


@pytest.mark.parametrize(
    "name, dims, types, flops, nbytes, dtype",
    [
        # addbmm: input [3,5] + Σ_b A[b]·B[b], A [2,3,4], B [2,4,5]: 2·2·3·4·5 = 240 FLOPs;
        # bytes (fp32) = input 15·4 + A 24·4 + B 40·4 + out 15·4 = 60 + 96 + 160 + 60 = 376
        (matmul.ADDBMM, [[3, 5], [2, 3, 4], [2, 4, 5], [], []], ["float"] * 3 + ["Scalar"] * 2, 240, 376, "fp32"),
        # _int_mm: int8 [8,16]·[16,4] → int32: 2·8·16·4 = 1024; bytes 128 + 64 + 4·32 = 320
        (matmul.INT_MM, [[8, 16], [16, 4]], ["signed char"] * 2, 1024, 320, "int8"),
        # _grouped_mm 2-D × 3-D (MoE: 10 tokens among 3 experts): 2·10·16·8 = 2560; bf16 bytes
        # 10·16·2 + 3·16·8·2 + 10·8·2 = 320 + 768 + 160 = 1248
        (matmul.GROUPED_MM, [[10, 16], [3, 16, 8], [3]], ["c10::BFloat16"] * 2 + ["int"], 2560, 1248, "bf16"),
        # _grouped_mm 3-D × 3-D: 4 pairs [6,16]·[16,8]: 2·4·6·16·8 = 6144; bytes 768 + 1024 + 384 = 2176
        (matmul.GROUPED_MM, [[4, 6, 16], [4, 16, 8]], ["c10::BFloat16"] * 2, 6144, 2176, "bf16"),
        # _grouped_mm 2-D × 2-D, K split in 3 (offs [3]): out [3,10,8]: 2·10·16·8 = 2560;
        # bytes 320 + 256 + 3·10·8·2 = 1056
        (matmul.GROUPED_MM, [[10, 16], [16, 8], [3]], ["c10::BFloat16"] * 2 + ["int"], 2560, 1056, "bf16"),
        # _scaled_grouped_mm: the fp8 operands at 0 and 1, scales after: 2560 FLOPs; 160 + 384 + 80 = 624
        (
            matmul.SCALED_GROUPED_MM,
            [[10, 16], [3, 16, 8], [10], [24], [3]],
            ["c10::Float8_e4m3fn"] * 2 + ["float", "float", "int"],
            2560,
            624,
            "fp8",
        ),
    ],
)
def test_newly_priced_matmul_ops(name, dims, types, flops, nbytes, dtype):
    from trainprof.analysis.cost.op_cost import op_cost

    c = op_cost(name, dims, types)
    assert (c.flops, c.bytes, c.dtype) == (flops, nbytes, dtype)


def test_communication_names_are_the_job_analysis_names():
    from trainprof.analysis.timeline.communication import collective_of

    # one kernel, one name in both blocks of analysis.json
    for kernel in (
        "ncclKernel_AllReduce_RING_LL_Sum_float",
        "ncclDevKernel_ReduceScatter_RING_LL",
        "ncclKernel_SendRecv",
        "ncclDevKernel_AllToAll",
        "ncclKernel_AllGather_RING_LL_Sum_int8",
    ):
        assert collective_of(kernel) == collectives.canonical_op(kernel) in collectives.NAMES


def test_an_old_record_reads_the_new_names():
    # tests/data/reports/gpu_trace was written before issue #44: "allreduce" for the DDP trace's
    # 2,020 NCCL kernels, which a new analysis names "all_reduce" (tests/integration/test_cli_analyze.py)
    from trainprof.recordtypes.analysis import Analysis
    from trainprof.recordtypes.timeline import CollectiveCount

    text = (REPORTS / "gpu_trace" / "analysis.json").read_bytes()
    assert b'"collective": "allreduce"' in text
    old = msgspec.json.decode(text, type=Analysis).ranks[0].communication.collectives
    assert [(c.collective, c.count) for c in old] == [("all_reduce", 2020)]
    new = CollectiveCount(collective="all_reduce", count=1, total_us=1.0)
    assert (
        msgspec.convert({"collective": "sendrecv", "count": 1, "total_us": 1.0}, CollectiveCount).collective
        == "send_recv"
        and new.collective == "all_reduce"
    )
