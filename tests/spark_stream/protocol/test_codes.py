"""The generated error code table covers every error type once, in code order."""

from __future__ import annotations

from spark_stream import errors
from spark_stream.protocol.codes import error_classes, error_table


def test_table_lists_every_error_once_in_code_order() -> None:
    classes = error_classes()
    codes = [cls.code for cls in classes]
    assert codes == sorted(set(codes))
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, errors.FluvioError):
            assert obj in classes
            assert f"| {obj.code} | `{obj.__name__}` |" in error_table()
    assert "| 10 | `NotLeaderError` | yes |" in error_table()
