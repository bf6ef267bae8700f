"""One word for each thing: the vocabularies several layers spell (issue #44 item 1).

Each module holds one concept's names and nothing else: the matmul-like aten ops with their
operand positions (matmul.py), collective names (collectives.py), idle causes (idle.py) and
the temporal breakdown's parts (parts.py). They sit among the foundations (they import only
namematch), so trace/, analysis/, diagnose/ and report/ all import them; a literal spelled
elsewhere fails tests/unit/test_vocabularies.py."""
