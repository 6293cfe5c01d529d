"""The session and golden harness itself (`transcript.py`, the JSON matcher of
`test_serve_sessions.py`): wildcards match what they should and nothing
more, escapes round-trip, masks survive regeneration. No netc needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_serve_sessions import carry, matches

import transcript
from transcript import lines_match


def test_line_wildcards():
    assert lines_match([], []) and not lines_match([], ["a"]) and not lines_match(["a"], [])
    assert lines_match(["..."], []) and lines_match(["..."], ["a", "b"])
    assert lines_match(["a", "...", "c"], ["a", "b", "b", "c"])
    assert not lines_match(["a", "...", "c"], ["a", "b"])
    assert lines_match(["a", "...", "b", "c"], ["a", "b", "x", "b", "c"])
    assert lines_match(["x [..] z"], ["x yy z"]) and not lines_match(["x [..] z"], ["x yy w"])
    assert not lines_match(["a(b)"], ["ab"]), "the rest of a line is literal, not a regex"
    assert lines_match(["..."] + ["a"] * 3, ["a"] * 5000), "long outputs do not recurse"


def test_redaction(tmp_path: Path):
    text = f"{tmp_path}/state/x.flows in 83 ms (1.5 s) {transcript.REPO}/rules 7 ingress classes"
    assert transcript.redact(text, tmp_path) == "{work}/state/x.flows in [TIME] ([TIME]) {repo}/rules 7 ingress classes"
    assert transcript.redact("generation 3  2026-11-21T14:05:09Z  root", tmp_path) == "generation 3  [TIMESTAMP]  root"


def test_escapes_round_trip_and_comments_stay_on_top(tmp_path: Path):
    for line in ["# a", "@b", "> c", "! d", "< e", "\\f", "plain"]:
        assert transcript.unescape(transcript.escape(line)) == line
    f = tmp_path / "x.session"
    f.write_text("# about\n@run a b\n> ?- q.\n\\# an answer\n! an error\n")
    s = transcript.parse(f)
    assert s.directive("run") == "a b" and s.steps[0].expected == ["\\# an answer", "! an error"]
    f.write_text("> ?- q.\n# a comment among the answers\n")
    with pytest.raises(ValueError, match="comments go before"):
        transcript.parse(f)


def test_json_masks():
    assert matches({"a": "[..]", "b": [1, 2]}, {"a": {"deep": 1}, "b": [1, 2]})
    assert not matches({"a": 1}, {"a": 1, "extra": 2}), "a key more is a difference"
    assert not matches({"a": 1}, {"a": True}) and not matches([1], [1, 1])
    assert matches({"m": "in [..] ms"}, {"m": "in 12 ms"}) and not matches({"m": "in [..] ms"}, {"m": "in 12 s"})
    assert carry({"a": "[..]", "b": 1}, {"a": 5, "b": 2, "c": 3}) == {"a": "[..]", "b": 2, "c": 3}
