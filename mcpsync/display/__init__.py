"""How results look in a notebook and on a terminal.

:mod:`~mcpsync.display.notebook` gives the result types their ``_repr_html_`` and friends;
:mod:`~mcpsync.display.progress` is the progress bar of ``on_progress="bar"``;
:mod:`~mcpsync.display.schema` names JSON Schema types; :mod:`~mcpsync.display.text` cuts and
escapes plain text. The types import this package, so it imports none of them.
"""
