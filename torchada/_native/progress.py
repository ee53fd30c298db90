"""What a native build, or a wait for another process's build, shows on stderr while it runs.

A cold build takes from a second to minutes; silence cannot be told from a hang. So:

- on a terminal: one line, redrawn every second with ninja's own ``[n/m]`` count and the seconds
  so far, replaced at the end by one line with the elapsed time;
- elsewhere (a pipe, a CI log, ``kubectl logs``): one line at the start, then every
  :data:`LOG_EVERY_SECONDS` a line with ninja's ``[n/m]`` and the seconds so far (a log that stays
  silent for a minute cannot be told from a hung process), and one line at the end;
- with ``TORCHADA_QUIET=1``: one line at the start and one at the end, no more.

Ninja itself is run by :func:`run_ninja`, which relays its status lines here and keeps its whole
output for the error message of a failed build.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from types import TracebackType
from typing import Callable, List, Optional, Sequence, TextIO, Tuple, Type

from .._core.env import flag

QUIET_ENV = "TORCHADA_QUIET"
REDRAW_SECONDS = 1.0
# How often a build says it is still going where the line cannot be redrawn (a log).
LOG_EVERY_SECONDS = 15.0

# ninja's status line as NINJA_STATUS sets it below: "[3/7] " then the command.
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")


def live(stream: Optional[TextIO] = None) -> bool:
    """Whether progress is drawn on ``stream`` (default stderr): a terminal, and
    ``TORCHADA_QUIET`` not on.

    Example::

        >>> import io
        >>> live(io.StringIO())
        False
    """
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        tty = False
    return tty and not flag(QUIET_ENV)


def _columns(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or 80  # a terminal that was given no size says 0


class Progress:
    """One build's (or one wait's) lines on stderr: ``start`` when entered, ``done`` (with the
    elapsed seconds) when left, ``failed`` when left by an exception; on a terminal the start line
    is redrawn every second with :meth:`status` and the seconds so far. Elsewhere, unless
    ``TORCHADA_QUIET`` is on, a line every ``log_every`` seconds says the same: ``ongoing``
    (default: ``start`` without its trailing dots), the status and the seconds so far.

    Example::

        >>> import io
        >>> out = io.StringIO()
        >>> with Progress("torchada: building x...", "torchada: built x in {seconds:.1f} s",
        ...               stream=out) as shown:
        ...     shown.status("[1/2]")
        >>> out.getvalue().splitlines()[0]
        'torchada: building x...'
    """

    def __init__(
        self,
        start: str,
        done: str,
        failed: str = "",
        *,
        stream: Optional[TextIO] = None,
        redraw: Optional[bool] = None,
        ongoing: str = "",
        log_every: Optional[float] = None,
    ) -> None:
        self.start_text = start
        self.done_text = done
        self.failed_text = failed or done
        # No stderr at all (pythonw, a daemon): the lines go nowhere.
        self.stream = stream or sys.stderr or io.StringIO()
        self.redraw = live(self.stream) if redraw is None else redraw
        self.ongoing_text = ongoing or start.rstrip(".")
        if log_every is None:
            log_every = 0.0 if self.redraw or flag(QUIET_ENV) else LOG_EVERY_SECONDS
        self.log_every = log_every
        self.started = time.perf_counter()
        self._ended: Optional[float] = None
        self._status = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    @property
    def seconds(self) -> float:
        """The seconds from entering to leaving (so far, while inside)."""
        return (self._ended or time.perf_counter()) - self.started

    def status(self, text: str) -> None:
        """What the line shows beside the seconds so far (ninja's ``[n/m]``), drawn at once."""
        with self._lock:
            self._status = text
            self._draw()

    def say(self, text: str) -> None:
        """A whole line of other output (a verbose build's), kept apart from the redrawn one."""
        with self._lock:
            self.stream.write(("\r\033[K" if self.redraw else "") + text)
            if not text.endswith("\n"):
                self.stream.write("\n")
            self._draw()

    def __enter__(self) -> "Progress":
        self.started = time.perf_counter()
        with self._lock:
            if self.redraw:
                self._draw()
            else:
                self._write_line(self.start_text)
        if self.redraw or self.log_every > 0:
            self._ticker = threading.Thread(
                target=self._tick if self.redraw else self._log,
                name="torchada-progress",
                daemon=True,
            )
            self._ticker.start()
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        err: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self._ended = time.perf_counter()
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        text = self.done_text if kind is None else self.failed_text
        with self._lock:
            if self.redraw:
                self.stream.write("\r\033[K")
            self._write_line(text.format(seconds=self.seconds))

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            with self._lock:
                self._draw()

    def _log(self) -> None:
        while not self._stop.wait(self.log_every):
            with self._lock:
                status = f" {self._status}" if self._status else ""
                self._write_line(f"{self.ongoing_text}:{status} {self.seconds:.0f} s so far")

    def _draw(self) -> None:
        # Held under the lock. One terminal row: a line that wraps cannot be redrawn with "\r".
        if not self.redraw:
            return
        tail = f" {self._status} {self.seconds:.0f} s" if self._status else f" {self.seconds:.0f} s"
        room = max(_columns(self.stream) - 1 - len(tail), 10)
        head = (
            self.start_text if len(self.start_text) <= room else self.start_text[: room - 3] + "..."
        )
        self.stream.write("\r\033[K" + head + tail)
        self._flush()

    def _write_line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self._flush()

    def _flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass


def ninja_command(ninja: str, verbose: bool = True) -> List[str]:
    """``ninja -v``, with ``-j $MAX_JOBS`` where set (as torch's own runner does).

    Example::

        >>> ninja_command("ninja")[:2]
        ['ninja', '-v']
    """
    command = [ninja] + (["-v"] if verbose else [])
    jobs = os.environ.get("MAX_JOBS", "").strip()
    if jobs.isdigit():
        command += ["-j", jobs]
    return command


def run_ninja(
    command: Sequence[str],
    cwd: str,
    on_status: Callable[[str], None],
    echo: Optional[Callable[[str], None]] = None,
) -> Tuple[int, str]:
    """Run ninja in ``cwd``; pass each ``[n/m]`` it prints to ``on_status``, every line to ``echo``
    when given. Returns the exit status and the whole output (stdout and stderr together, for a
    failure's message).

    Ninja's one pipe is read to its end here: it never fills up and blocks the build. An
    interrupted run stops ninja (which stops its compilers) before the exception goes on; the
    caller's private build directory holds whatever they left.

    Example::

        >>> run_ninja(["ninja", "--version"], ".", print)[0]  # doctest: +SKIP
        0
    """
    env = dict(os.environ, NINJA_STATUS="[%f/%t] ")
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    lines: List[str] = []
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace")
            lines.append(line)
            match = _STATUS.match(line)
            if match:
                on_status(f"[{match.group(1)}/{match.group(2)}]")
            if echo is not None:
                echo(line)
        status = proc.wait()
    finally:
        if proc.poll() is None:  # interrupted: ninja stops its compilers on SIGTERM
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
    return status, "".join(lines)
