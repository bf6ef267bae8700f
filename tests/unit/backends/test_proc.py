"""One /proc `Field: N kB` parser (backends/cpu.py: proc_kib) for meminfo and self/status."""

from trainprof.backends.cpu import proc_kib


def test_proc_kib_reads_the_named_field(tmp_path):
    f = tmp_path / "status"
    f.write_text("Name:\tpython\nVmHWM:\t  118000 kB\nVmRSS:\t   90000 kB\n")
    assert proc_kib(str(f), "VmHWM") == 118000 * 1024  # kB in proc(5) are KiB
    assert proc_kib(str(f), "VmSwap") is None and proc_kib(str(tmp_path / "none"), "VmHWM") is None
