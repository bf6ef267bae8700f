"""jobs/tune_program.TuneJobView (a Protocol, so that tune_program does not import jobs/tune.py
back) lists only what jobs/tune_config.TuneJob has."""

import dataclasses

from trainprof.jobs.tune_config import TuneJob
from trainprof.jobs.tune_program import TuneJobView


def test_the_view_lists_only_the_jobs_fields():
    view = set(TuneJobView.__annotations__)
    assert {"train", "program"} <= view
    assert view - {f.name for f in dataclasses.fields(TuneJob)} == set()
    assert isinstance(TuneJob.argv, property) and isinstance(TuneJobView.argv, property)
