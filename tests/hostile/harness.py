"""What "refused cleanly" means for a hostile input, checked the same way in every category:

- the documented exit code (2 for bad input unless the category documents another);
- something printed, at most a few lines, each naming the thing and how to fix it, with no
  traceback and no Python exception name;
- no secret echoed (the category's secret value, wherever it was planted);
- nothing started and nothing hung: the call returns within a deadline (an alarm), in process.

Each category's test module builds many variants from the probe's seed samples and asserts this
for each; ``python -m tests.hostile.measure`` prints the share refused cleanly per category.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import click
import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import BadInputError, LabctlError

SECRET = "Hst1le-s3cret-9Zq"  # planted in hostile inputs; must never be printed
DEADLINE_S = 20  # no hostile input may keep labctl longer (a FIFO hung it before)


@dataclass(frozen=True)
class Case:
    category: str
    id: str
    run: Callable[[], tuple[int, str]]  # -> (exit code, what was printed)
    codes: tuple[int, ...] = (2,)
    secret: str = SECRET
    says: str = ""  # a fragment the output must hold ("" for any)
    max_lines: int = 6  # a command that reports a table (compare) may print more


class Timeout(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: int = DEADLINE_S) -> Iterator[None]:
    def fire(_signum: int, _frame: object) -> None:
        raise Timeout(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def judge(case: Case, code: int, shown: str) -> str | None:
    """None when the case was refused cleanly, else what was not clean."""
    lines = [line for line in shown.splitlines() if line.strip()]
    if code not in case.codes:
        return f"exit {code}, expected {case.codes}: {shown[-400:]!r}"
    if not lines:
        return "nothing printed"
    if "Traceback" in shown:
        return "a traceback"
    if case.secret and case.secret in shown:
        return "the secret is echoed"
    if len(lines) > case.max_lines:
        return f"{len(lines)} lines printed: {shown[:400]!r}"
    if case.says and case.says not in shown:
        return f"{case.says!r} not said: {shown[-400:]!r}"
    return None


def outcome(case: Case) -> str | None:
    """Run one case under the deadline and judge it."""
    try:
        with deadline():
            code, shown = case.run()
    except Timeout as exc:
        return str(exc)
    except Exception as exc:  # anything escaping is not a clean refusal
        return f"{type(exc).__name__} escaped: {exc}"
    return judge(case, code, shown)


def cli_run(args: list[str], capsys: pytest.CaptureFixture[str] | None = None) -> tuple[int, str]:
    """`labctl ARGS` in process, as the console script runs it: (exit code, stdout + stderr)."""
    runner_out: list[str] = []
    with _capture(runner_out):
        code = run_cli(cli, args)
    return code, "".join(runner_out)


@contextlib.contextmanager
def _capture(out: list[str]) -> Iterator[None]:
    """Collect what click echoes (stdout and stderr) without pytest's capsys."""
    import io
    import sys

    old = sys.stdout, sys.stderr
    buf_out, buf_err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = buf_out, buf_err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = old
        out.append(buf_out.getvalue() + buf_err.getvalue())


def api_run(call: Callable[[], object]) -> tuple[int, str]:
    """An API call as the CLI would report it: a labctl error is its exit code and one line each;
    a click usage error is 2; returning normally is exit 0 (not a refusal)."""
    try:
        call()
    except LabctlError as exc:
        return exc.exit_code, "\n".join(f"error: {line}" for line in str(exc).splitlines())
    except click.UsageError as exc:
        return 2, exc.format_message()
    return 0, "accepted"


__all__ = ["SECRET", "BadInputError", "Case", "api_run", "cli_run", "judge", "outcome"]
