"""A record as its file holds it (dicts and lists, "class" for the renamed fields, fields
left UNSET absent): for tests that check many fields of an analyser's Struct at once."""

import msgspec

from trainprof.jsontext import encode_hook


def plain(obj: object) -> object:
    return msgspec.to_builtins(obj, enc_hook=encode_hook)
