"""The lines a rank worker writes on stderr for the launcher, and their parsing. Pure.

    perfkit-rank: start I                   rank 0 begins point I
    perfkit-rank: done I                    rank 0 recorded point I in run.partial.json
    perfkit-rank: fail R I timeout|error|waiting TEXT
                                            rank R gives up on point I (it hung, raised, or
                                            timed out waiting on another rank)
torchrun's own report of the first failed worker ("Root Cause") names a rank that died.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

PREFIX = "perfkit-rank: "


def start_line(index: int) -> str:
    return f"{PREFIX}start {index}"


def done_line(index: int) -> str:
    return f"{PREFIX}done {index}"


def fail_line(rank: int, index: int, how: str, text: str) -> str:
    return f"{PREFIX}fail {rank} {index} {how} " + " ".join(text.split())[:400]


@dataclass(frozen=True)
class RankFailure:
    rank: int
    index: int | None
    how: str  # timeout | error | waiting | died | exited
    text: str


_FAIL = re.compile(r"^fail (\d+) (\d+) (\w+) ?(.*)$")
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_ROOT_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")


@dataclass
class LaunchLog:
    """What one torchrun said: points started and done, rank failures, the root cause."""

    started: list[int]
    done: list[int]
    failures: list[RankFailure]
    root_rank: int | None = None
    root_exit: int | None = None
    _in_root: bool = False

    @classmethod
    def empty(cls) -> LaunchLog:
        return cls([], [], [])

    def feed(self, line: str) -> bool:
        """Take one stderr line; True when it was a perfkit marker (not to be shown)."""
        text = line.rstrip("\n")
        if text.startswith(PREFIX):
            body = text[len(PREFIX):]
            if body.startswith("start "):
                self.started.append(int(body.split()[1]))
            elif body.startswith("done "):
                self.done.append(int(body.split()[1]))
            else:
                m = _FAIL.match(body)
                if m:
                    self.failures.append(RankFailure(int(m[1]), int(m[2]), m[3], m[4]))
            return True
        if "Root Cause (first observed failure)" in text:
            self._in_root = True
        elif self._in_root:
            if (m := _ROOT_RANK.match(text)) and self.root_rank is None:
                self.root_rank = int(m[1])
            elif (m := _ROOT_EXIT.match(text)) and self.root_exit is None:
                self.root_exit = int(m[1])
                self._in_root = False
        return False

    @property
    def running(self) -> int | None:
        """The point started and not recorded when the launch ended, if any."""
        pending = [i for i in self.started if i not in self.done]
        return pending[-1] if pending else None

    def culprit(self, returncode: int) -> RankFailure:
        """The rank to blame: one killed by a signal (torchrun's root cause), else one that hung
        while the others waited on it, else the first that reported an error, else torchrun's."""
        index = self.running
        root_signal = self.root_exit is not None and self.root_exit < 0 and self.root_exit != -signal.SIGTERM
        if root_signal and self.root_rank is not None and self.root_exit is not None:
            return RankFailure(self.root_rank, index, "died", f"killed by {_signal_name(-self.root_exit)}")
        for how in ("timeout", "error", "waiting"):
            for f in self.failures:
                if f.how == how:
                    return f
        if self.root_rank is not None:
            return RankFailure(self.root_rank, index, "exited", f"exited with code {self.root_exit}")
        return RankFailure(-1, index, "exited", f"torchrun exited with code {returncode}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe(f: RankFailure) -> str:
    who = f"rank {f.rank}" if f.rank >= 0 else "an unknown rank"
    if f.how == "timeout":
        return f"{who} hung: {f.text}"
    if f.how == "waiting":
        return f"{who} timed out waiting on another rank: {f.text}"
    if f.how == "died":
        return f"{who} died ({f.text})"
    if f.how == "error":
        return f"{who} failed: {f.text}"
    return f"{who} {f.text}"
