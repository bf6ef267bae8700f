"""Decoded events -> numpy columns, one batch at a time.

The reader hands over a few thousand msgspec `Event`s at a time; each batch becomes arrays
and is then dropped, so peak memory holds one batch of Python objects, not the whole trace
(decoding all 216k events of the largest shared trace at once needs ~150 MB of objects).

Speed notes: the per-row work is list comprehensions and `map(attrgetter(...))`, which run
at C speed; `np.array(list, dtype)` converts a whole column at once. Strings are interned
into ids with one C-level dict lookup per row (`map(dict.get, ...)`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import compress, repeat
from operator import attrgetter, eq, is_not
from typing import Any

import msgspec
import numpy as np

from trainprof.trace.kinds import GPU_KINDS, GPU_WORK_KINDS, category_kinds
from trainprof.trace.schema import EMPTY_ARGS, RAW_EMPTY, Event

_FLOW_PHASE = {"s": 0, "t": 1, "f": 2}
_PH = attrgetter("ph")
_GPU_KINDS = np.array(sorted(int(k) for k in GPU_KINDS), dtype=np.int8)
_WORK_KINDS = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.int8)
_I64 = (-(2**63), 2**63)
WINDOW = 4096  # events per column-building step (measured: 5k fastest, 50k +45% time)

_SHAPE_ARGS = (  # column name, Args attribute
    ("dims_id", "input_dims"),
    ("types_id", "input_type"),
    ("strides_id", "input_strides"),
    ("concrete_id", "concrete_inputs"),
)


def int_column(values: list, dtype=np.int64) -> np.ndarray:
    """Ints with None -> -1 and "0x1f"-style strings parsed. The fast path is one C call; the
    slow one runs only for a batch holding nulls ("Python parent id" of root frames) or
    strings (ROCm writes args.stream as "0x0")."""
    try:
        return np.array(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        return np.array([_as_int(v) for v in values], dtype=dtype)


def _as_int(v: Any) -> int:
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            return -1
    return v if isinstance(v, int) and _I64[0] <= v < _I64[1] else -1


def _triples(lists: list) -> np.ndarray:
    """grid/block [x, y, z] lists -> (m, 3) int32, -1 where absent or malformed."""
    out = np.full((len(lists), 3), -1, dtype=np.int32)
    idx = [i for i, v in enumerate(lists) if type(v) is list and len(v) == 3]
    if idx:
        try:
            out[idx] = np.array([lists[i] for i in idx], dtype=np.int32)
        except (TypeError, ValueError, OverflowError):  # non-int members: keep what parses
            for i in idx:
                try:
                    out[i] = np.array(lists[i], dtype=np.int32)
                except (TypeError, ValueError, OverflowError):
                    pass
    return out


def _present(values: list, absent: Any) -> np.ndarray:
    """Indices of values that are not the `absent` sentinel (an identity test, in C)."""
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(absent)), dtype=bool, count=len(values)))


def _intern(table: dict, values: list) -> list[int]:
    """Id of each value in `table`, adding new values. One C-level dict lookup per value;
    the Python loop runs only for batches that bring new strings."""
    ids = list(map(table.get, values))
    if None in ids:
        add = table.setdefault
        ids = [add(v, len(table)) if i is None else i for v, i in zip(values, ids)]
    return ids


def _to_tuple(v: Any) -> Any:
    return tuple(_to_tuple(x) for x in v) if isinstance(v, list) else v


class ColumnBuilder:
    """Accumulates batches; `finish()` returns the sorted columns and side tables."""

    def __init__(self) -> None:
        self.names: dict[Any, int] = {}
        self.cats: dict[Any, int] = {}
        self.lanes: dict[str, int] = {}
        self.values: dict[bytes, int] = {}
        self.cols: dict[str, list[np.ndarray]] = defaultdict(list)
        self.gpu: dict[str, list[np.ndarray]] = defaultdict(list)
        self.coll: dict[str, list] = defaultdict(list)
        self.flows: dict[str, list[np.ndarray]] = defaultdict(list)
        self.phase_counts: Counter = Counter()
        self.skips: Counter = Counter()
        self.args_dropped = 0
        self.args_coerced = 0
        self.n = 0
        self._pending: list[Event | None] = []
        self.holes = False  # some events added are None

    # ---------------------------------------------------------------- per batch
    def add(self, events: list[Event | None]) -> None:
        """Take decoded events in file order; None stands for an undecodable one (whoever
        adds one sets `holes`).

        Work is done per WINDOW events of the file, whatever the decode batches were, so the
        interned ids (the order of `names`, `categories`, `arg_values`) do not depend on
        how the reader cut the file."""
        pending = self._pending
        pending.extend(events)
        while len(pending) >= WINDOW:
            self._add_window(pending[:WINDOW])
            del pending[:WINDOW]

    def _flush(self) -> None:
        if self._pending:
            self._add_window(self._pending)
            self._pending = []

    def _add_window(self, events: list[Event | None]) -> None:
        if self.holes:
            events = [e for e in events if e is not None]
        ph = list(map(_PH, events))
        self.phase_counts.update(ph)
        xs = list(compress(events, map(eq, ph, repeat("X"))))
        fl = list(compress(events, map(_FLOW_PHASE.__contains__, ph)))
        if xs:
            self._add_complete(xs)
        if fl:
            self._add_flows(fl)

    def _lane(self, values: list) -> np.ndarray:
        """pid/tid: ints, numeric strings, or labels such as "Spans" (-> ids -2, -3, ...)."""
        try:
            return np.array(values, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            out = []
            lanes = self.lanes
            for v in values:
                if isinstance(v, int):
                    out.append(v if _I64[0] <= v < _I64[1] else -1)
                elif v is None:
                    out.append(-1)
                else:
                    s = str(v)
                    try:
                        out.append(int(s))
                    except ValueError:
                        out.append(-2 - lanes.setdefault(s, len(lanes)))
            return np.array(out, dtype=np.int64)

    def _add_complete(self, xs: list[Event]) -> None:
        ts = np.array([e.ts for e in xs], dtype=np.float64)  # None -> NaN
        dur = np.array([e.dur for e in xs], dtype=np.float64)
        missing = ~(np.isfinite(ts) & np.isfinite(dur))
        negative = ~missing & (dur < 0)
        if missing.any() or negative.any():
            self.skips["X event without a finite ts/dur"] += int(missing.sum())
            self.skips["X event with negative dur"] += int(negative.sum())
            keep = np.flatnonzero(~(missing | negative))
            xs = [xs[i] for i in keep]
            ts, dur = ts[keep], dur[keep]
            if not xs:
                return
        n = len(xs)
        name_id = np.array(_intern(self.names, list(map(attrgetter("name"), xs))), dtype=np.int32)
        cat_id = np.array(_intern(self.cats, list(map(attrgetter("cat"), xs))), dtype=np.int16)
        pid = self._lane([e.pid for e in xs])
        tid = self._lane([e.tid for e in xs])

        args = [e.args for e in xs]
        if None in args:
            args = [EMPTY_ARGS if a is None else a for a in args]

        def col(attr: str, dtype=np.int64) -> np.ndarray:
            return int_column(list(map(attrgetter(attr), args)), dtype)

        kind = category_kinds(list(self.cats))[cat_id]
        gpu = np.isin(kind, _GPU_KINDS)
        stream = col("stream")
        stream = np.where(gpu & (stream < 0), tid, stream)
        device = col("device")
        # Kineto draws each GPU as a process whose pid is the device index.
        device = np.where(gpu & (device < 0) & (pid >= 0) & (pid < 2**15), pid, device).astype(np.int16)
        ext = col("external_id")
        legacy = col("external_id_legacy")
        ext = np.where(ext < 0, legacy, ext)

        c = self.cols
        c["name_id"].append(name_id)
        c["cat_id"].append(cat_id)
        c["pid"].append(pid)
        c["tid"].append(tid)
        c["stream"].append(stream)
        c["device"].append(device)
        c["ts"].append(ts)
        c["dur"].append(dur)
        c["correlation"].append(col("correlation"))
        c["external_id"].append(ext)
        c["python_id"].append(col("python_id"))
        c["python_parent_id"].append(col("python_parent_id"))
        c["ev_idx"].append(col("ev_idx"))
        for column, attr in _SHAPE_ARGS:
            c[column].append(self._value_ids(args, attr))
        legacy_dims = self._value_ids(args, "input_dims_legacy")
        c["dims_id"][-1] = np.where(c["dims_id"][-1] < 0, legacy_dims, c["dims_id"][-1])

        work = np.flatnonzero(np.isin(kind, _WORK_KINDS))
        if len(work):
            self._add_gpu([args[i] for i in work], work + self.n)
        ci = _present(list(map(attrgetter("collective"), args)), None)
        if len(ci):
            self._add_collectives([args[i] for i in ci], ci + self.n)
        self.n += n

    def _value_ids(self, args: list, attr: str) -> np.ndarray:
        """Id of each row's raw JSON value in the shared value table, -1 when absent."""
        raws = list(map(attrgetter(attr), args))
        out = np.full(len(raws), -1, dtype=np.int32)
        idx = _present(raws, RAW_EMPTY)  # absent keys share the default object
        if len(idx):
            # bytes() copies the slice, so the batch buffer is not kept alive.
            out[idx] = _intern(self.values, [bytes(raws[i]) for i in idx])
        return out

    def _add_gpu(self, sub: list, rows: np.ndarray) -> None:
        g = self.gpu
        g["row"].append(rows)
        g["grid"].append(_triples([a.grid for a in sub]))
        g["block"].append(_triples([a.block for a in sub]))
        g["registers_per_thread"].append(int_column([a.registers_per_thread for a in sub], np.int32))
        g["shared_memory_bytes"].append(int_column([a.shared_memory for a in sub], np.int64))
        g["occupancy_pct"].append(np.array([a.occupancy_pct for a in sub], dtype=np.float32))
        g["bytes"].append(int_column([a.bytes for a in sub]))
        g["bandwidth_gbs"].append(np.array([a.bandwidth_gbs for a in sub], dtype=np.float32))

    def _add_collectives(self, sub: list, rows: np.ndarray) -> None:
        c = self.coll
        c["row"].append(rows)
        c["name"].extend(a.collective for a in sub)
        c["process_group"].extend(a.process_group for a in sub)
        c["dtype"].extend(a.dtype for a in sub)
        c["in_nelems"].append(int_column([a.in_nelems for a in sub]))
        c["out_nelems"].append(int_column([a.out_nelems for a in sub]))
        c["group_size"].append(int_column([a.group_size for a in sub]))

    def _add_flows(self, fl: list[Event]) -> None:
        ids = [e.id for e in fl]
        try:
            fid = np.array(ids, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            fid = np.array([_flow_id(v) for v in ids], dtype=np.int64)
        ts = np.array([e.ts for e in fl], dtype=np.float64)
        ok = np.isfinite(ts) & (fid != -1)
        if not ok.all():
            self.skips["flow event without id/ts"] += int((~ok).sum())
            keep = np.flatnonzero(ok)
            fl, fid, ts = [fl[i] for i in keep], fid[keep], ts[keep]
        f = self.flows
        f["id"].append(fid)
        f["phase"].append(np.array([_FLOW_PHASE[e.ph] for e in fl], dtype=np.int8))
        f["cat_id"].append(np.array(_intern(self.cats, [e.cat for e in fl]), dtype=np.int16))
        f["pid"].append(self._lane([e.pid for e in fl]))
        f["tid"].append(self._lane([e.tid for e in fl]))
        f["ts"].append(ts)

    # ---------------------------------------------------------------- at the end
    def max_ts(self) -> float:
        self._flush()
        parts = [a for a in self.cols["ts"] if len(a)] + [a for a in self.flows["ts"] if len(a)]
        return max((float(a.max()) for a in parts), default=0.0)

    def finish(self, us_per_unit: float) -> dict[str, Any]:
        """Columns sorted by (ts, -dur), times scaled to microseconds, side rows remapped."""
        self._flush()
        cat = _concat(self.cols)
        ts = cat("ts") * us_per_unit
        dur = cat("dur") * us_per_unit
        order = np.lexsort((-dur, ts))  # parents (longer) before children at equal ts
        new_row = np.empty_like(order)
        new_row[order] = np.arange(len(order))

        out: dict[str, Any] = {"ts_us": ts[order], "dur_us": dur[order]}
        out["end_us"] = out["ts_us"] + out["dur_us"]
        dtypes = {"name_id": np.int32, "cat_id": np.int16, "device": np.int16, "dims_id": np.int32,
                  "types_id": np.int32, "strides_id": np.int32, "concrete_id": np.int32}
        for column in ("name_id", "cat_id", "pid", "tid", "stream", "device", "correlation", "external_id",
                       "python_id", "python_parent_id", "ev_idx", "dims_id", "types_id", "strides_id",
                       "concrete_id"):
            out[column] = cat(column, dtypes.get(column, np.int64))[order]

        out["names"] = tuple("" if s is None else s for s in self.names)
        out["categories"] = tuple("" if s is None else s for s in self.cats)
        out["lane_labels"] = tuple(self.lanes)
        out["arg_values"] = tuple(_to_tuple(msgspec.json.decode(v)) for v in self.values)
        out["gpu"] = self._finish_side(self.gpu, new_row, _GPU_EMPTY)
        out["collectives"] = self._finish_side(self.coll, new_row, _COLL_EMPTY)
        fc = _concat(self.flows)
        out["flows"] = {"id": fc("id", np.int64), "phase": fc("phase", np.int8), "cat_id": fc("cat_id", np.int16),
                        "pid": fc("pid", np.int64), "tid": fc("tid", np.int64), "ts_us": fc("ts", np.float64) * us_per_unit}
        return out

    @staticmethod
    def _finish_side(parts: dict[str, list], new_row: np.ndarray, empty: dict) -> dict[str, Any]:
        if not parts.get("row"):
            return {k: (np.zeros(shape, dtype) if shape is not None else ()) for k, (shape, dtype) in empty.items()}
        rows = new_row[np.concatenate(parts["row"])]
        order = np.argsort(rows, kind="stable")
        out: dict[str, Any] = {"row": rows[order]}
        for k, v in parts.items():
            if k == "row":
                continue
            if v and isinstance(v[0], np.ndarray):
                out[k] = np.concatenate(v)[order]
            else:  # list of strings
                out[k] = tuple(v[i] for i in order)
        return out


def _concat(parts: dict[str, list[np.ndarray]]):
    """A getter that concatenates one column's per-batch arrays (empty when none)."""

    def get(column: str, dtype=np.float64) -> np.ndarray:
        arrays = parts.get(column)
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)
    return get


def _flow_id(v: Any) -> int:
    """Flow ids are ints in Kineto; the Chrome format also allows strings ("0x1f")."""
    return _as_int(v)


_GPU_EMPTY = {"row": (0, np.int64), "grid": ((0, 3), np.int32), "block": ((0, 3), np.int32),
              "registers_per_thread": (0, np.int32), "shared_memory_bytes": (0, np.int64),
              "occupancy_pct": (0, np.float32), "bytes": (0, np.int64), "bandwidth_gbs": (0, np.float32)}
_COLL_EMPTY = {"row": (0, np.int64), "name": (None, None), "process_group": (None, None), "dtype": (None, None),
               "in_nelems": (0, np.int64), "out_nelems": (0, np.int64), "group_size": (0, np.int64)}
