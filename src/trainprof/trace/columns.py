"""Decoded events -> numpy columns, one window of the file at a time.

The reader hands over decoded msgspec `Event`s in file order; every WINDOW of them becomes
arrays and is then dropped, so peak memory holds one window of Python objects, not the
whole trace (decoding all 216k events of the largest shared trace at once needs ~150 MB).

Speed notes: every per-row step is a C-level pass (`map(attrgetter(...))`, `compress`,
`np.fromiter(map(...))`), and the number of passes is what costs, ~20-30 ns per row each
(freeing the window's objects is another ~0.2 µs per event, and decoding them ~0.4). So:
  - args keys that most rows lack (stream, device, Python ids, shapes, collectives, ...)
    are read in ONE pass as a tuple per row; a row whose tuple equals the all-defaults
    tuple (identity checks in C: the defaults are shared objects) is done, and only the
    other rows are looked at column by column;
  - strings are interned with one dict lookup per row (`map(dict.get, ...)`), and
    `np.array` on the ids is also the test for "some string is new";
  - per-category facts (GPU lane? GPU work?) are tables indexed by cat_id.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain, compress, repeat
from operator import attrgetter, eq, is_, is_not, itemgetter, ne
from typing import Any

import msgspec
import numpy as np

from trainprof.trace.kinds import GPU_KINDS, GPU_WORK_KINDS, category_kinds
from trainprof.trace.numbers import BAD_VALUE, I64 as _I64, OUT_OF_RANGE, value_ok
from trainprof.trace.schema import EMPTY_ARGS, RAW_EMPTY, Event

WINDOW = 4096  # events per column-building step (measured: 5k fastest, 50k +45% time)
BLOCK_BYTES = 8 << 20  # column storage grows in blocks up to this size (see _Growing)
_FLOW_PHASE = {"s": 0, "t": 1, "f": 2}
_PH = attrgetter("ph")
_GPU_KINDS = np.array(sorted(int(k) for k in GPU_KINDS), dtype=np.int8)
_WORK_KINDS = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.int8)
_TS, _DUR, _NAME, _CAT = attrgetter("ts"), attrgetter("dur"), attrgetter("name"), attrgetter("cat")
_PID, _TID, _ARGS, _ID = attrgetter("pid"), attrgetter("tid"), attrgetter("args"), attrgetter("id")
_CORRELATION, _EXTERNAL_ID, _EV_IDX = attrgetter("correlation"), attrgetter("external_id"), attrgetter("ev_idx")

# correlation, external_id and ev_idx are read column by column (most rows have them); the
# args most rows lack are read in one pass (module docstring). The order here is the order of
# the columns below and, for the shape values, the order in which values are interned.
_SPARSE = ("stream", "device", "external_id_legacy", "python_id", "python_parent_id",
           "input_dims", "input_type", "input_strides", "concrete_inputs", "input_dims_legacy",
           "collective")
_SPARSE_GET = attrgetter(*_SPARSE)
_INT_OR_STR = ("stream", "device")
_SPARSE_DEFAULT = _SPARSE_GET(EMPTY_ARGS)
_SHAPE_COLUMNS = ("dims_id", "types_id", "strides_id", "concrete_id", "legacy_dims")
_GPU_GET = attrgetter("grid", "block", "registers_per_thread", "shared_memory", "occupancy_pct", "bytes",
                      "bandwidth_gbs")


def int_column(values: list, dtype=np.int64) -> np.ndarray:
    """Ints with None -> -1 and "0x1f"-style strings parsed. The fast path is one C call; the
    slow one runs only for a batch holding nulls ("Python parent id" of root frames) or
    strings (ROCm writes args.stream as "0x0")."""
    try:
        return np.array(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        info = np.iinfo(dtype)  # a value the column's type cannot hold is absent, as None is (#45:
        return np.array([_as_int(v, info.min, info.max + 1) for v in values], dtype=dtype)  # int32 regs)


def int_or_str_column(values: list) -> np.ndarray:
    """int | str | None values (args.stream, flow ids). Every string is parsed alone as
    int(s, 0) ("0x1f"), so its value does not depend on its neighbours: np.array would take
    "010" as 10 when every other value is decimal, but not beside a "0x0"."""
    if str in set(map(type, values)):
        return np.array([_as_int(v) for v in values], dtype=np.int64)
    return int_column(values)


def _as_int(v: Any, lo: int = _I64[0], hi: int = _I64[1]) -> int:
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            return -1
    return v if isinstance(v, int) and lo <= v < hi else -1


def _triples(lists) -> np.ndarray:
    """grid/block [x, y, z] lists -> (m, 3) int32, -1 where absent or malformed."""
    n = len(lists)
    out = np.full((n, 3), -1, dtype=np.int32)
    idx = list(compress(range(n), map(is_, map(type, lists), repeat(list))))
    if not idx:
        return out
    sub = lists if len(idx) == n else itemgetter(*idx)(lists) if len(idx) > 1 else (lists[idx[0]],)
    if len(set(map(len, sub))) == 1 and len(sub[0]) == 3:
        try:  # one flat C pass instead of one small array per row
            out[idx] = np.fromiter(chain.from_iterable(sub), dtype=np.int32, count=3 * len(idx)).reshape(-1, 3)
            return out
        except (TypeError, ValueError, OverflowError):
            pass
    for i in idx:  # lists of other lengths, or members that are not int32
        if len(lists[i]) == 3:
            try:
                out[i] = np.array(lists[i], dtype=np.int32)
            except (TypeError, ValueError, OverflowError):
                pass
    return out


def _intern(table: dict, values: list, dtype) -> np.ndarray:
    """Id of each value in `table` (adding new values, in order) as an array. One C-level
    dict lookup per value; a None id (a new string) makes np.array raise, and only then
    does a Python loop run."""
    ids = list(map(table.get, values))
    try:
        return np.array(ids, dtype=dtype)
    except TypeError:
        add = table.setdefault
        return np.array([add(v, len(table)) if i is None else i for v, i in zip(values, ids)], dtype=dtype)


_ABSENT: dict[Any, np.ndarray] = {}


def _absent(n: int, dtype) -> np.ndarray:
    """n times -1, read-only and shared: most columns of most windows are all absent."""
    a = _ABSENT.get(dtype)
    if a is None or len(a) < n:
        a = _ABSENT[dtype] = np.full(max(n, WINDOW), -1, dtype=dtype)
        a.flags.writeable = False
    return a[:n]


def _to_tuple(v: Any) -> Any:
    return tuple(_to_tuple(x) for x in v) if isinstance(v, list) else v


def _column(get, objs, dtype=np.int64) -> np.ndarray:
    """`get` of every object (get=None: the objects themselves) as an array. np.fromiter is
    one C pass and no list; when a value does not convert (None, a string, an overflow)
    the column is redone by int_column, or by np.array for floats (None -> NaN), so the
    values are exactly those of the list path."""
    try:
        return np.fromiter(objs if get is None else map(get, objs), dtype=dtype, count=len(objs))
    except (TypeError, ValueError, OverflowError):
        values = list(objs if get is None else map(get, objs))
        return np.array(values, dtype=dtype) if np.dtype(dtype).kind == "f" else int_column(values, dtype)


class _Growing:
    """One column, appended window by window into a few large blocks.

    Per-window arrays are small (4096 rows) and, kept in a list until the end, they fill the
    malloc heap in interleaved pieces that are never handed back to the OS: joining them
    then needs a second copy of every column on top (the 200 MB trace peaked at 170 MB,
    100 before joining). Large blocks, growing to BLOCK_BYTES, are mmap'ed by malloc and
    go back whole when dropped; np.empty leaves untouched rows out of the RSS."""

    __slots__ = ("blocks", "fill", "rows")

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.fill = 0  # rows used in the last block
        self.rows = 0

    def __len__(self) -> int:
        return self.rows

    def append(self, a: np.ndarray) -> None:
        n = len(a)
        self.rows += n
        while n:
            if not self.blocks or self.fill == len(self.blocks[-1]):
                size = min(max(self.rows, 1 << 14), max(BLOCK_BYTES // a[:1].nbytes, 1))
                self.blocks.append(np.empty((size,) + a.shape[1:], dtype=a.dtype))
                self.fill = 0
            block = self.blocks[-1]
            k = min(n, len(block) - self.fill)
            block[self.fill : self.fill + k] = a[len(a) - n : len(a) - n + k]
            self.fill += k
            n -= k

    def _filled(self) -> list[np.ndarray]:
        return self.blocks[:-1] + [self.blocks[-1][: self.fill]] if self.blocks else []

    def max(self) -> float:
        return max((float(b.max()) for b in self._filled() if len(b)), default=0.0)

    def count_above(self, x: float) -> int:
        return sum(int(np.count_nonzero(b > x)) for b in self._filled())

    def join(self) -> np.ndarray:
        """All rows as one new array; the blocks are dropped."""
        parts = self._filled()
        self.blocks, self.fill = [], 0
        return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()


class ColumnBuilder:
    """Accumulates events; `finish()` returns the sorted columns and side tables."""

    def __init__(self) -> None:
        self.names: dict[Any, int] = {}
        self.cats: dict[Any, int] = {}
        self.lanes: dict[str, int] = {}
        self.values: dict[bytes, int] = {}
        self.bad_values: set[bytes] = set()  # shape values holding a number out of range (value_ok)
        self.cols: dict[str, _Growing] = defaultdict(_Growing)
        self.gpu: dict[str, _Growing] = defaultdict(_Growing)
        self.coll: dict[str, list] = defaultdict(list)  # rare: lists of per-window pieces
        self.flows: dict[str, _Growing] = defaultdict(_Growing)
        self.phase_counts: Counter = Counter()
        self.skips: Counter = Counter()
        self.args_dropped = 0
        self.args_coerced = 0
        self.surrogates = 0  # lone UTF-16 surrogate escapes replaced by U+FFFD (reader.py, limits.fix_surrogates)
        self.n = 0
        self.holes = False  # some events added are None (undecodable); set by whoever adds them
        self._pending: list[Event | None] = []
        self._cat_tables: tuple[np.ndarray, np.ndarray] = (np.zeros(0, bool), np.zeros(0, bool))

    # ---------------------------------------------------------------- per window
    def add(self, events: list[Event | None]) -> None:
        """Take decoded events in file order (None: an undecodable one, see `holes`).

        Work is done per WINDOW events of the file, whatever the decode batches were, so the
        interned ids (the order of `names`, `categories`, `arg_values`) do not depend on how
        the reader cut the file."""
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
        if xs:
            self._add_complete(xs)
        if len(xs) < len(events):
            is_flow = list(map(_FLOW_PHASE.__contains__, ph))
            fl = list(compress(events, is_flow))
            if fl:  # after the rows: categories are interned rows first
                self._add_flows(fl, list(compress(ph, is_flow)))

    def _lane(self, values: list) -> tuple[np.ndarray, np.ndarray | None]:
        """pid/tid: ints, numeric strings, or labels such as "Spans" (-> ids -2, -3, ...).
        Second: the rows whose number does not fit int64 (an int, or a numeric string such
        as "99999999999999999999", which raised OverflowError: issue #33), None if none; the
        caller skips those events (`_numbers_in_range`)."""
        try:
            return np.array(values, dtype=np.int64), None
        except (TypeError, ValueError, OverflowError):
            out = []
            bad = []
            lanes = self.lanes
            for i, v in enumerate(values):
                if isinstance(v, int):
                    n = v
                elif v is None:
                    out.append(-1)
                    continue
                else:
                    s = str(v)
                    try:
                        n = int(s)
                    except ValueError:  # a label; or digits past int()'s 4300-digit limit: a number
                        if s.strip().lstrip("+-").isdigit():
                            n = _I64[1]
                        else:
                            out.append(-2 - lanes.setdefault(s, len(lanes)))
                            continue
                if _I64[0] <= n < _I64[1]:
                    out.append(n)
                else:
                    out.append(-1)
                    bad.append(i)
            return np.array(out, dtype=np.int64), (np.array(bad, dtype=np.int64) if bad else None)

    def _numbers_in_range(self, n: int, *bad_rows: np.ndarray | None, shapes: dict | None = None
                          ) -> np.ndarray | None:
        """The rows to keep when some event holds a number trainprof cannot represent (a
        pid/tid beyond int64, a shape value with an int beyond int64 or a float beyond
        double: `"Input Dims": [[1e999, 2]]`); None when every row is fine. Those events are
        skipped and counted (a traceback before, issue #33): the same rows in both builders."""
        bad = [b for b in bad_rows if b is not None]
        if shapes is not None and self.bad_values:
            bad += [np.flatnonzero(s == BAD_VALUE) for s in shapes.values()]
        if not bad:
            return None
        mask = np.ones(n, dtype=bool)
        for b in bad:
            mask[b] = False
        if mask.all():
            return None
        self.skips[OUT_OF_RANGE] += int(n - mask.sum())
        return np.flatnonzero(mask)

    def _category_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(on a GPU lane, is GPU work) per category id; rebuilt when a category is new."""
        if len(self._cat_tables[0]) != len(self.cats):
            kinds = category_kinds(list(self.cats))
            self._cat_tables = (np.isin(kinds, _GPU_KINDS), np.isin(kinds, _WORK_KINDS))
        return self._cat_tables

    def _add_complete(self, xs: list[Event]) -> None:
        ts = _column(_TS, xs, np.float64)  # None -> NaN
        dur = _column(_DUR, xs, np.float64)
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
        name_id = _intern(self.names, list(map(_NAME, xs)), np.int32)
        cat_id = _intern(self.cats, list(map(_CAT, xs)), np.int16)
        pid, pid_bad = self._lane(list(map(_PID, xs)))
        tid, tid_bad = self._lane(list(map(_TID, xs)))
        args = list(map(_ARGS, xs))
        try:
            sparse = list(map(_SPARSE_GET, args))
        except AttributeError:  # some event has no args (absent or null)
            args = [EMPTY_ARGS if a is None else a for a in args]
            sparse = list(map(_SPARSE_GET, args))

        # Args most rows lack: -1 everywhere, then the rows that have any of them.
        ints = dict.fromkeys(_SPARSE[:5], _absent(n, np.int64))
        shapes = dict.fromkeys(_SHAPE_COLUMNS, _absent(n, np.int32))
        collective_rows: list[int] = []
        has = np.flatnonzero(np.fromiter(map(ne, sparse, repeat(_SPARSE_DEFAULT)), dtype=bool, count=n))
        if len(has):
            rows = has.tolist()
            values = list(zip(*(itemgetter(*rows)(sparse) if len(rows) > 1 else (sparse[rows[0]],))))
            for k, v, default in zip(_SPARSE[:5], values[:5], _SPARSE_DEFAULT):
                if v.count(default) < len(v):
                    ints[k] = np.full(n, -1, dtype=np.int64)
                    ints[k][has] = (int_or_str_column if k in _INT_OR_STR else int_column)(list(v))
            for k, v in zip(_SHAPE_COLUMNS, values[5:10]):
                if v.count(RAW_EMPTY) < len(v):
                    shapes[k] = np.full(n, -1, dtype=np.int32)
                    shapes[k][has] = self._value_ids(v)
            collective_rows = [r for r, v in zip(rows, values[10]) if v is not None]

        keep = self._numbers_in_range(n, pid_bad, tid_bad, shapes=shapes)
        if keep is not None:  # rare: events with a number out of range go, every column with them
            if not len(keep):
                return
            name_id, cat_id, pid, tid, ts, dur = name_id[keep], cat_id[keep], pid[keep], tid[keep], ts[keep], dur[keep]
            ints = {k: v[keep] for k, v in ints.items()}
            shapes = {k: v[keep] for k, v in shapes.items()}
            new_pos = np.full(n, -1, dtype=np.int64)
            new_pos[keep] = np.arange(len(keep))
            collective_rows = [int(new_pos[r]) for r in collective_rows if new_pos[r] >= 0]
            args = [args[i] for i in keep.tolist()]
            n = len(keep)

        ext = _column(_EXTERNAL_ID, args)
        is_work = self._append_complete(name_id, cat_id, pid, tid, ints, shapes, ts, dur,
                                        _column(_CORRELATION, args), ext, _column(_EV_IDX, args))
        work = np.flatnonzero(is_work[cat_id])
        if len(work):
            self._add_gpu([args[i] for i in work.tolist()], work + self.n)
        if collective_rows:
            self._add_collectives([args[i] for i in collective_rows], np.array(collective_rows, dtype=np.int64) + self.n)
        self.n += n

    def _append_complete(self, name_id, cat_id, pid, tid, ints: dict, shapes: dict, ts, dur, correlation,
                         ext, ev_idx) -> np.ndarray:
        """Append one window's X rows, given as arrays (both builders end here); returns the
        is-GPU-work table by category id."""
        on_gpu, is_work = self._category_tables()
        gpu = on_gpu[cat_id]
        stream = np.where(gpu & (ints["stream"] < 0), tid, ints["stream"])
        # Kineto draws each GPU as a process whose pid is the device index.
        device = ints["device"]
        device = np.where(gpu & (device < 0) & (pid >= 0) & (pid < 2**15), pid, device).astype(np.int16)
        ext = np.where(ext < 0, ints["external_id_legacy"], ext)

        c = self.cols
        c["name_id"].append(name_id)
        c["cat_id"].append(cat_id)
        c["pid"].append(pid)
        c["tid"].append(tid)
        c["stream"].append(stream)
        c["device"].append(device)
        c["ts"].append(ts)
        c["dur"].append(dur)
        c["correlation"].append(correlation)
        c["external_id"].append(ext)
        c["python_id"].append(ints["python_id"])
        c["python_parent_id"].append(ints["python_parent_id"])
        c["ev_idx"].append(ev_idx)
        dims = shapes["dims_id"]
        c["dims_id"].append(np.where(dims < 0, shapes["legacy_dims"], dims))
        for column in _SHAPE_COLUMNS[1:4]:
            c[column].append(shapes[column])
        return is_work

    def _value_ids(self, raws) -> np.ndarray:
        """Id of each raw JSON value in the shared value table, -1 when absent."""
        out = np.full(len(raws), -1, dtype=np.int32)
        idx = list(compress(range(len(raws)), map(is_not, raws, repeat(RAW_EMPTY))))  # absent: the shared default
        if idx:
            # bytes() copies the slice, so the batch buffer is not kept alive.
            values = [bytes(raws[i]) for i in idx]
            ids = list(map(self.values.get, values))
            try:
                out[idx] = np.array(ids, dtype=np.int32)
            except TypeError:  # new values: checked once each, and interned unless out of range
                out[idx] = [self.value_id(v) if i is None else i for v, i in zip(values, ids)]
        return out

    def value_id(self, raw: bytes) -> int:
        """The id of a new shape value (added), or BAD_VALUE (its numbers are out of range)."""
        if raw in self.bad_values or not value_ok(raw):
            self.bad_values.add(raw)
            return BAD_VALUE
        return self.values.setdefault(raw, len(self.values))

    def _add_gpu(self, sub: list, rows: np.ndarray) -> None:
        grid, block, regs, smem, occupancy, nbytes, bandwidth = zip(*map(_GPU_GET, sub))
        self._append_gpu(rows, _triples(grid), _triples(block), _column(None, regs, np.int32),
                         _column(None, smem, np.int64), _column(None, occupancy, np.float32),
                         _column(None, nbytes, np.int64), _column(None, bandwidth, np.float32))

    def _append_gpu(self, rows, grid, block, regs, smem, occupancy, nbytes, bandwidth) -> None:
        g = self.gpu
        g["row"].append(rows)
        g["grid"].append(grid)
        g["block"].append(block)
        g["registers_per_thread"].append(regs)
        g["shared_memory_bytes"].append(smem)
        g["occupancy_pct"].append(occupancy)
        g["bytes"].append(nbytes)
        g["bandwidth_gbs"].append(bandwidth)

    def _add_collectives(self, sub: list, rows: np.ndarray) -> None:
        self._append_collectives(rows, [a.collective for a in sub], [a.process_group for a in sub],
                                 [a.dtype for a in sub], int_column([a.in_nelems for a in sub]),
                                 int_column([a.out_nelems for a in sub]), int_column([a.group_size for a in sub]),
                                 int_column([a.seq for a in sub]))

    def _append_collectives(self, rows, names, groups, dtypes, in_nelems, out_nelems, group_size, seq) -> None:
        c = self.coll
        c["row"].append(rows)
        c["name"].extend(names)
        c["process_group"].extend(groups)
        c["dtype"].extend(dtypes)
        c["in_nelems"].append(in_nelems)
        c["out_nelems"].append(out_nelems)
        c["group_size"].append(group_size)
        c["seq"].append(seq)

    def _add_flows(self, fl: list[Event], ph: list[str]) -> None:
        fid = int_or_str_column(list(map(_ID, fl)))
        ts = _column(_TS, fl, np.float64)
        ok = np.isfinite(ts) & (fid != -1)
        if not ok.all():
            self.skips["flow event without id/ts"] += int((~ok).sum())
            keep = np.flatnonzero(ok).tolist()
            fl, ph, fid, ts = [fl[i] for i in keep], [ph[i] for i in keep], fid[keep], ts[keep]
        cat_id = _intern(self.cats, list(map(_CAT, fl)), np.int16)
        (pid, pid_bad), (tid, tid_bad) = self._lane(list(map(_PID, fl))), self._lane(list(map(_TID, fl)))
        phase = np.fromiter(map(_FLOW_PHASE.__getitem__, ph), dtype=np.int8, count=len(ph))
        keep = self._numbers_in_range(len(fl), pid_bad, tid_bad)
        if keep is not None:
            fid, phase, cat_id, pid, tid, ts = fid[keep], phase[keep], cat_id[keep], pid[keep], tid[keep], ts[keep]
        self._append_flows(fid, phase, cat_id, pid, tid, ts)

    def _append_flows(self, fid, phase, cat_id, pid, tid, ts) -> None:
        f = self.flows
        f["id"].append(fid)
        f["phase"].append(phase)
        f["cat_id"].append(cat_id)
        f["pid"].append(pid)
        f["tid"].append(tid)
        f["ts"].append(ts)

    # ---------------------------------------------------------------- at the end
    def ts_share_above(self, x: float) -> float:
        """Share of all timestamps (events and flows) above `x`; 0 with no events."""
        self._flush()
        ts, fl = self.cols["ts"], self.flows["ts"]
        total = len(ts) + len(fl)
        return (ts.count_above(x) + fl.count_above(x)) / total if total else 0.0

    def finish(self, us_per_unit: float) -> dict[str, Any]:
        """Columns sorted by (ts, -dur), times scaled to microseconds, side rows remapped.
        Each column's per-window pieces are dropped as soon as it is joined, so the peak is
        about one copy of the columns, not two."""
        self._flush()
        cat = _concat(self.cols)
        ts, dur = cat("ts"), cat("dur")
        if us_per_unit != 1.0:
            ts *= us_per_unit
            dur *= us_per_unit
        order = np.lexsort((-dur, ts))  # parents (longer) before children at equal ts
        new_row = np.empty_like(order)
        new_row[order] = np.arange(len(order))

        out: dict[str, Any] = {"ts_us": ts[order], "dur_us": dur[order]}
        del ts, dur
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
        flow_ts = fc("ts", np.float64)
        if us_per_unit != 1.0:
            flow_ts *= us_per_unit
        out["flows"] = {"id": fc("id", np.int64), "phase": fc("phase", np.int8), "cat_id": fc("cat_id", np.int16),
                        "pid": fc("pid", np.int64), "tid": fc("tid", np.int64), "ts_us": flow_ts}
        return out

    @staticmethod
    def _finish_side(parts: dict[str, Any], new_row: np.ndarray, empty: dict) -> dict[str, Any]:
        if not len(parts.get("row", ())):
            return {k: (np.zeros(shape, dtype) if shape is not None else ()) for k, (shape, dtype) in empty.items()}
        rows = new_row[_join(parts.pop("row"))]
        order = np.argsort(rows, kind="stable")
        out: dict[str, Any] = {"row": rows[order]}
        for k in list(parts):
            v = parts.pop(k)
            if isinstance(v, _Growing) or (v and isinstance(v[0], np.ndarray)):
                out[k] = _join(v)[order]
            else:  # list of strings
                out[k] = tuple(v[i] for i in order)
        return out


def _join(v: _Growing | list[np.ndarray]) -> np.ndarray:
    return v.join() if isinstance(v, _Growing) else np.concatenate(v)


def _concat(parts: dict[str, _Growing]):
    """A getter that joins one column (empty when it has no rows) and drops its pieces."""

    def get(column: str, dtype=np.float64) -> np.ndarray:
        col = parts.pop(column, None)
        return col.join().astype(dtype, copy=False) if col is not None and len(col) else np.zeros(0, dtype=dtype)
    return get


_GPU_EMPTY = {"row": (0, np.int64), "grid": ((0, 3), np.int32), "block": ((0, 3), np.int32),
              "registers_per_thread": (0, np.int32), "shared_memory_bytes": (0, np.int64),
              "occupancy_pct": (0, np.float32), "bytes": (0, np.int64), "bandwidth_gbs": (0, np.float32)}
_COLL_EMPTY = {"row": (0, np.int64), "name": (None, None), "process_group": (None, None), "dtype": (None, None),
               "in_nelems": (0, np.int64), "out_nelems": (0, np.int64), "group_size": (0, np.int64),
               "seq": (0, np.int64)}
