"""mutate_batches.py N [SEED]: N batches of real events, randomly cut and spliced, into the C
scanner; it must answer True/False (or MemoryError), never crash. Used by sanitize_scanner.sh
under ASan/UBSan; run alone it checks only that no exception other than False comes back."""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

import msgspec

from trainprof.trace import _scan
from trainprof.trace.schema import TopLevel

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
SOURCES = ("real/hta_ddp_2rank_nccl_a100/nccl_data.json.gz",
           "real/tracelens_mi300_hf_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
           "real/hta_resnet_v100_ns_timeunit/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
# JSON's structural bytes, escapes, digits, literals' letters, control and invalid UTF-8 bytes
ALPHABET = b'{}[]",:\\-+.eE0123456789 \n\tnulltruefalse\x00\x01\x7f\xc3\xa9\xed\xa0\x80uXpht'


def main(n: int, seed: int) -> int:
    rng = random.Random(seed)
    corpus = []
    for name in SOURCES:
        raws = msgspec.json.decode(gzip.open(DATA / name).read(), type=TopLevel).traceEvents
        corpus += [bytes(r) for r in raws[:3000]]
    corpus.append((DATA / "edge_cases.json").read_bytes())
    accepted = 0
    for _ in range(n):
        b = bytearray(b"[" + b",".join(rng.choice(corpus) for _ in range(rng.randint(1, 4))) + b"]")
        for _ in range(rng.randint(0, 6)):
            op, pos = rng.random(), rng.randrange(len(b) + 1)
            if op < 0.4:
                del b[pos:pos + rng.randint(1, 8)]
            elif op < 0.8:
                b[pos:pos] = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))
            else:
                del b[pos:]
        sc = _scan.Scanner()
        if sc.scan(bytes(b)):
            accepted += 1
            sc.take(len(sc))
    print(f"{n} mutated batches, {accepted} taken by the scanner, no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000, int(sys.argv[2]) if len(sys.argv) > 2 else 0))
