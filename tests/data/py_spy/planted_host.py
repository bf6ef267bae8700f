"""The program behind planted_host.py_spy.txt: per step, `collate` does 3x the pure-Python
work of `metrics` (the same loop), then a short sleep. Recorded with
`py-spy record --rate 100 --format raw --nonblocking -o planted_host.py_spy.txt -- python planted_host.py`."""

import time


def work(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def collate() -> int:
    return work(300_000)


def metrics() -> int:
    return work(100_000)


def main() -> None:
    for _ in range(60):
        collate()
        metrics()
        time.sleep(0.005)


if __name__ == "__main__":
    main()
