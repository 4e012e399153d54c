"""`Printed` and the processor behind `KStream.print`: a debugging sink that writes lines of text.

Each record becomes one line, `[label]: <key>, <value>` by default, as Kafka Streams prints it: the
label defaults to the name of the stream printed, and `None` prints as `null` (Java's `%s` of null).
Standard output is flushed after every line. A file is opened (and truncated) when `Printed.to_file`
is called, so a path that cannot be written fails while the topology is built, as in Kafka Streams;
its lines are buffered and reach the file when the processors close (Kafka Streams flushes a file
only on close, too).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, Any

from streamlet.errors import TopologyError
from streamlet.processor import Processor
from streamlet.record import Record

KeyValueFormatter = Callable[[Any, Any], Any]


def java_string(value: Any) -> str:
    """What Java's `String.valueOf` prints for the values a stream carries (`null`, `true`/`false`)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _default_format(key: Any, value: Any) -> str:
    return f"{java_string(key)}, {java_string(value)}"


class _Output:
    """Where printed lines go: standard output (flushed per line) or a file shared by every task's printer,
    closed when the last of them closes."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._file: IO[str] | None = None
        self._users = 0
        if path is not None:
            self._file = self._open(path, "w")

    @staticmethod
    def _open(path: str, mode: str) -> IO[str]:
        try:
            return open(path, mode, encoding="utf-8")
        except OSError as exc:
            raise TopologyError(f"Unable to write stream to file at [{path}] {exc}") from exc

    def acquire(self) -> None:
        if self._path is not None and self._file is None:  # a topology run again after its printers closed
            self._file = self._open(self._path, "a")
        self._users += 1

    def write(self, line: str) -> None:
        if self._file is None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        else:
            self._file.write(line + "\n")

    def release(self) -> None:
        self._users -= 1
        if self._file is not None and self._users <= 0:
            self._file.close()
            self._file = None
        elif self._file is None:
            sys.stdout.flush()


class Printed:
    """Where and how `KStream.print` writes records: `Printed.to_sys_out()` or `Printed.to_file(path)`, then
    optionally `.with_label(label)` (default: the printed stream's name), `.with_key_value_mapper(fn)`
    (`fn(key, value)` returns the text after the label; default `key, value`) and `.with_name(name)` (the
    printer node's name). Each `with_*` returns a new `Printed`."""

    def __init__(self, output: _Output, label: str | None = None, mapper: KeyValueFormatter | None = None,
                 name: str | None = None) -> None:
        self._output = output
        self.label = label
        self.mapper: KeyValueFormatter = mapper or _default_format
        self.name = name

    @classmethod
    def to_sys_out(cls) -> Printed:
        """Print to standard output."""
        return cls(_Output(None))

    @classmethod
    def to_file(cls, file_path: str) -> Printed:
        """Print to the file `file_path`, created or truncated now."""
        if file_path is None:
            raise TypeError("file_path can't be None")
        if not str(file_path).strip():
            raise TopologyError("filePath can't be an empty string")
        return cls(_Output(str(file_path)))

    def with_label(self, label: str) -> Printed:
        """Print `[label]: ...` instead of the stream's name."""
        if label is None:
            raise TypeError("label can't be None")
        return Printed(self._output, label, self.mapper, self.name)

    def with_key_value_mapper(self, mapper: KeyValueFormatter) -> Printed:
        """`mapper(key, value)` gives the text printed after the label."""
        if not callable(mapper):
            raise TypeError(f"mapper must be callable, got {mapper!r}")
        return Printed(self._output, self.label, mapper, self.name)

    def with_name(self, name: str) -> Printed:
        """Name the printer node (instead of `KSTREAM-PRINTER-<index>`)."""
        return Printed(self._output, self.label, self.mapper, name)

    def processor_supplier(self, default_label: str) -> Callable[[], Processor]:
        """The printer's supplier; `default_label` (the printed stream's name) when no label was given."""
        label = self.label if self.label is not None else default_label
        output, mapper = self._output, self.mapper
        return lambda: StreamPrint(output, label, mapper)

    def __repr__(self) -> str:
        return f"Printed(label={self.label!r}, name={self.name!r})"


class StreamPrint(Processor):
    """Writes one line per record and forwards nothing (a print ends its branch)."""

    def __init__(self, output: _Output, label: str, mapper: KeyValueFormatter) -> None:
        self._output = output
        self._label = label
        self._mapper = mapper
        self._open = False

    def init(self, context: Any) -> None:
        super().init(context)
        self._output.acquire()
        self._open = True

    def process(self, record: Record) -> None:
        self._output.write(f"[{self._label}]: {java_string(self._mapper(record.key, record.value))}")

    def close(self) -> None:
        if self._open:
            self._open = False
            self._output.release()
