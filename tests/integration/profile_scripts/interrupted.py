"""A loop that interrupts itself: SIGINT to its own pid after `--after` seconds (as Ctrl-C would
reach it), wherever it then is: its own code, torch's, or trainprof's hooks. Without
trainprof it dies of the KeyboardInterrupt (exit 130 in a shell, -2 from Popen); under
`trainprof profile` it must die the same way (issue #37: exit 1 and CPython's "lost
sys.stderr" when the interrupt landed in trainprof's optimizer hook)."""

import argparse
import os
import signal
import threading
import time

import torch
import torch.nn.functional as F


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--after", type=float, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    threading.Timer(args.after, os.kill, (os.getpid(), signal.SIGINT)).start()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t_end = time.monotonic() + args.after + 30  # never reached: the interrupt comes first
    while time.monotonic() < t_end:
        x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.002)


if __name__ == "__main__":
    main()
