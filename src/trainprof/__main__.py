from trainprof.cli import entry

entry()
