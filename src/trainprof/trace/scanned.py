"""The C scanner's records -> the same columns as ColumnBuilder, window by window.

`_scan.Scanner` (the optional C extension, _scan.c) reads each `[ev, ...]` batch into fixed
records (`_scan.RECORD_SIZE` bytes), viewed here as a numpy structured array. This builder
keeps ColumnBuilder's windows (WINDOW events of the file each) and its interning order
(names, categories, lanes, shape values: first seen first, per window), and ends in the
same `_append_*` methods, so
`finish()` returns exactly what the pure-Python path returns for the same file
(tests/unit/trace/test_scanner.py checks it on every shipped trace and on generated ones).

Strings arrive as the scanner's local ids (one per distinct raw spelling; `strings[id]` is the
str, 0 is None); a local-to-global array per table turns a window's ids into the builder's
ids with one gather, and only ids never seen before go through the Python dicts.

Where the read's time goes, scanner against the pure path: docs/benchmarks.md, "Trace reading".
"""

from __future__ import annotations

import numpy as np

from trainprof.trace import _scan
from trainprof.trace.columns import WINDOW, ColumnBuilder, _as_int

REC = np.dtype([(n, "<f8") for n in _scan.F64] + [(n, "<i8") for n in _scan.I64] + [(n, "<i4") for n in _scan.I32])
assert REC.itemsize == _scan.RECORD_SIZE, "_scan.c and scanned.py disagree on the record"
FLOW_FIRST = 3  # the scanner's fixed ids: 0 None, 1 "", 2 "X", 3-5 "s", "t", "f" (ColumnBuilder's flow codes + 3)
_SHAPES = (("dims_id", "dims"), ("types_id", "types"), ("strides_id", "strides"), ("concrete_id", "concrete"),
           ("legacy_dims", "dims_legacy"))


class ScanBuilder(ColumnBuilder):
    """ColumnBuilder fed by the C scanner: `scan(batch)` instead of `add(events)`."""

    def __init__(self) -> None:
        super().__init__()
        self.scanner = _scan.Scanner()
        self._l2g: dict[str, np.ndarray] = {}

    def scan(self, batch: bytes) -> bool:
        """Read one `[...]` batch; False (nothing added) when the scanner does not take it."""
        if not self.scanner.scan(batch):
            return False
        while len(self.scanner) >= WINDOW:
            self._add_records(*self.scanner.take(WINDOW))
        return True

    def _flush(self) -> None:
        if len(self.scanner):
            self._add_records(*self.scanner.take(len(self.scanner)))

    # ------------------------------------------------------------------ local ids
    def _global(self, key: str, table: dict, local: np.ndarray, objects: list) -> np.ndarray:
        """Ids in `table` of the objects with these local ids, new ones added in order of
        first appearance (as columns._intern adds them)."""
        l2g = self._l2g.get(key)
        if l2g is None or len(l2g) < len(objects):
            grown = np.full(len(objects) + 1024, -1, dtype=np.int64)
            if l2g is not None:
                grown[: len(l2g)] = l2g
            l2g = self._l2g[key] = grown
        ids = l2g[local]
        new = ids < 0
        if new.any():
            fresh, first = np.unique(local[new], return_index=True)
            add = table.setdefault
            for loc in fresh[np.argsort(first, kind="stable")].tolist():
                # shape values are checked once each (columns.value_ok): out of range -> BAD_VALUE
                l2g[loc] = self.value_id(objects[loc]) if table is self.values else add(objects[loc], len(table))
            ids = l2g[local]
        return ids

    def _lanes(self, value: np.ndarray, sid: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        if (sid < 0).all():
            return value, None  # the scanner's ints are within int64 (it leaves the others to msgspec)
        strings = self.scanner.strings
        return self._lane([strings[s] if s >= 0 else v for v, s in zip(value.tolist(), sid.tolist())])

    def _ints(self, value: np.ndarray, sid: np.ndarray) -> np.ndarray:
        """int | str | None as columns.int_or_str_column reads it: strings one by one."""
        out = value.copy()
        rows = np.flatnonzero(sid >= 0)
        if len(rows):
            strings = self.scanner.strings
            out[rows] = [_as_int(strings[s]) for s in sid[rows].tolist()]
        return out

    # ------------------------------------------------------------------ per window
    def _add_records(self, ph: bytes, x: bytes, flows: bytes) -> None:
        """One window: every event's phase id, the X events' records, the flows' records."""
        ph = np.frombuffer(ph, dtype=np.int32)
        counts = np.bincount(ph)
        present = np.flatnonzero(counts)
        strings = self.scanner.strings
        keys = [strings[i] for i in present.tolist()]
        if len(keys) > 1 and not all(k in self.phase_counts for k in keys):
            # a new phase: Counter order is first appearance, as Counter.update(list) makes it
            order = np.argsort([int(np.argmax(ph == i)) for i in present.tolist()], kind="stable").tolist()
            present, keys = present[order], [keys[k] for k in order]
        for i, key in zip(present.tolist(), keys):
            self.phase_counts[key] += int(counts[i])
        if x:
            self._add_complete_records(np.frombuffer(x, dtype=REC))
        if flows:
            f = np.frombuffer(flows, dtype=REC)
            self._add_flow_records(f, (f["ph"] - FLOW_FIRST).astype(np.int8))

    def _add_complete_records(self, x: np.ndarray) -> None:
        ts, dur = x["ts"], x["dur"]
        missing = ~(np.isfinite(ts) & np.isfinite(dur))
        negative = ~missing & (dur < 0)
        if missing.any() or negative.any():
            self.skips["X event without a finite ts/dur"] += int(missing.sum())
            self.skips["X event with negative dur"] += int(negative.sum())
            x = x[~(missing | negative)]
            if not len(x):
                return
            ts, dur = x["ts"], x["dur"]
        strings = self.scanner.strings
        name_id = self._global("names", self.names, x["name"], strings).astype(np.int32)
        cat_id = self._global("cats", self.cats, x["cat"], strings).astype(np.int16)
        pid, pid_bad = self._lanes(x["pid"], x["pid_s"])
        tid, tid_bad = self._lanes(x["tid"], x["tid_s"])
        ints = {"stream": self._ints(x["stream"], x["stream_s"]), "device": self._ints(x["device"], x["device_s"]),
                "external_id_legacy": x["external_id_legacy"], "python_id": x["python_id"],
                "python_parent_id": x["python_parent_id"]}
        shapes = {}
        values = self.scanner.values
        for column, field in _SHAPES:
            local = x[field]
            ids = np.full(len(x), -1, dtype=np.int32)
            present = np.flatnonzero(local >= 0)
            if len(present):
                ids[present] = self._global("values", self.values, local[present], values)
            shapes[column] = ids
        keep = self._numbers_in_range(len(x), pid_bad, tid_bad, shapes=shapes)
        if keep is not None:  # rare: the same events as ColumnBuilder skips, every column with them
            if not len(keep):
                return
            x, name_id, cat_id, pid, tid = x[keep], name_id[keep], cat_id[keep], pid[keep], tid[keep]
            ts, dur = x["ts"], x["dur"]
            ints = {k: v[keep] for k, v in ints.items()}
            shapes = {k: v[keep] for k, v in shapes.items()}
        is_work = self._append_complete(name_id, cat_id, pid, tid, ints, shapes, ts, dur, x["correlation"],
                                        x["external_id"], x["ev_idx"])
        work = np.flatnonzero(is_work[cat_id])
        if len(work):
            g = _Rows(x, work)
            self._append_gpu(work + self.n, _triple(g, "grid"), _triple(g, "block"),
                             g["registers_per_thread"].astype(np.int32), g["shared_memory"],
                             g["occupancy_pct"].astype(np.float32), g["bytes"],
                             g["bandwidth_gbs"].astype(np.float32))
        coll = np.flatnonzero(x["collective"] != 0)
        if len(coll):
            c = _Rows(x, coll)
            self._append_collectives(coll.astype(np.int64) + self.n, [strings[i] for i in c["collective"].tolist()],
                                     [strings[i] for i in c["process_group"].tolist()],
                                     [strings[i] for i in c["dtype"].tolist()],
                                     c["in_nelems"], c["out_nelems"], c["group_size"], c["seq"])
        self.n += len(x)

    def _add_flow_records(self, f: np.ndarray, phase: np.ndarray) -> None:
        fid = self._ints(f["id"], f["id_s"])
        ts = f["ts"]
        ok = np.isfinite(ts) & (fid != -1)
        if not ok.all():
            self.skips["flow event without id/ts"] += int((~ok).sum())
            f, fid, phase = f[ok], fid[ok], phase[ok]
            ts = f["ts"]
        cat_id = self._global("cats", self.cats, f["cat"], self.scanner.strings).astype(np.int16)
        (pid, pid_bad), (tid, tid_bad) = self._lanes(f["pid"], f["pid_s"]), self._lanes(f["tid"], f["tid_s"])
        keep = self._numbers_in_range(len(f), pid_bad, tid_bad)
        if keep is not None:
            fid, phase, cat_id, pid, tid, ts = fid[keep], phase[keep], cat_id[keep], pid[keep], tid[keep], ts[keep]
        self._append_flows(fid, phase, cat_id, pid, tid, ts)


class _Rows:
    """Some rows of a record array, gathered field by field when asked: for 1,500 of a
    window's 4,096 records, the 11 GPU fields take 21 µs, whole records 414 µs (256 bytes
    then; median of 41)."""

    def __init__(self, records: np.ndarray, rows: np.ndarray) -> None:
        self.records, self.rows = records, rows

    def __getitem__(self, field: str) -> np.ndarray:
        return self.records[field][self.rows]


def _triple(g, field: str) -> np.ndarray:
    return np.stack([g[field + "0"], g[field + "1"], g[field + "2"]], axis=1)
