"""The saved records as msgspec Structs: one type per file, shared by its writer, its
readers, the rules and the renderers (issue #21), so the shape is written once.

| file            | schema               | Struct                       |
|-----------------|----------------------|------------------------------|
| ettr.json       | trainprof.ettr/1     | recordtypes.ettr.Ettr        |
| diff.json       | trainprof.diff/1     | recordtypes.diff.Diff        |
| bench.json      | trainprof.bench/1    | recordtypes.bench.Bench      |

Writers build the Struct and encode it (`jsontext.dumps` takes any Struct); readers decode
straight into it with `load` (base.py), which keeps issue #19's guarantees. Every field a
newer trainprof added has a default, so a record written by an older one still loads.
run.json's Structs (run.py: RunRecord and its parts, the public API's record types,
trainprof.RunRecord; system.py and run_parts.py: its blocks, typed with the wire form they had
as dicts) keep their own JSON form (`to_dict`, `to_json`: json.dumps's text).
"""
