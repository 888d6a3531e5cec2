"""schemas/event.schema.json and the pydantic models agree, and so does the fast checker.

The schema is generated from the models (`python -m loopx.model.schema`); these tests prove
the committed file is current, that both accept every line loopx writes, that both refuse
the same broken envelopes and data, and that `loopx.model.jsoncheck` (the write path's
pydantic-free validator) gives the same verdicts and the same normalised data as pydantic.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest

from loopx.engine.demo import create_demo
from loopx.model import jsoncheck
from loopx.model.events import EVENT_MODELS, Envelope, validate_data
from loopx.model.schema import PYTHON_CHECK, render
from loopx.resources import resource_dir
from loopx.store.filestore import FileStore

SCHEMA_PATH = resource_dir("schemas") / "event.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
BLOB = {"blob": "sha256:" + "ab" * 32}
REV = "0123456789abcdef0123456789abcdef01234567"

# Data for every type, including those the demo does not write.
SAMPLES: dict[str, dict[str, Any]] = {
    "goal.created": {"title": "T", "objective": BLOB, "acceptance": ["A", BLOB]},
    "goal.closed": {"outcome": "achieved", "reason": "Done"},
    "agent.registered": {"agent_id": "agent-a", "name": "A", "kind": "coding-agent"},
    "todo.added": {
        "todo_id": "t1",
        "title": "T",
        "depends_on": ["t0"],
        "priority": 0,
        "monitor": {
            "watch": "ci:run/42",
            "watch_kind": "ci",
            "next_at": "2026-01-01T00:00:00Z",
            "backoff": {"kind": "exponential", "seconds": 60, "cap": 600},
        },
    },
    "todo.updated": {"todo_id": "t1", "title": BLOB, "priority": 4, "role": "user"},
    "todo.claimed": {
        "todo_id": "t1",
        "agent_id": "a",
        "session_id": "s",
        "lease_expires_at": "2026-03-01T12:00:00Z",
    },
    "todo.renewed": {"todo_id": "t1", "lease_expires_at": "2026-03-01T12:30:00Z"},
    "todo.released": {"todo_id": "t1"},
    "todo.blocked": {"todo_id": "t1", "reason": "Waiting"},
    "todo.unblocked": {"todo_id": "t1", "reason": BLOB},
    "todo.reopened": {"todo_id": "t1", "reason": "Again"},
    "todo.cancelled": {"todo_id": "t1"},
    "todo.completed": {"todo_id": "t1", "summary": "S", "evidence_ids": ["ev-1"]},
    "gate.opened": {"gate_id": "g", "question": "Q?", "authority": "boss", "blocks": ["t1"]},
    "gate.resolved": {
        "gate_id": "g",
        "resolution": "deferred",
        "by": "boss",
        "ask_again_at": "2026-01-02T09:00:00Z",
    },
    "evidence.added": {
        "evidence_id": "ev-1",
        "kind": "test",
        "summary": "green",
        "refs": ["https://ci.example/1"],
        "revision": REV,
        "body": BLOB,
        "body_bytes": 12,
    },
    "run.recorded": {
        "run_id": "r1",
        "agent_id": "a",
        "session_id": "s",
        "outcome": "waiting",
        "wait": "CI",
        "quota_spent": 0,
    },
    "quota.set": {"quota": 5},
    "note.added": {"note_id": "n1", "kind": "lesson", "text": "L"},
    "field.redacted": {
        "redaction_id": "redaction-1",
        "entity": "gate",
        "entity_id": "gate-1",
        "field": "question",
        "reason": "a host name in a public question",
    },
    "finding.allowed": {
        "allowance_id": "allowance-1",
        "entity": "todo",
        "entity_id": "pair-with-host",
        "field": "id",
        "kind": "username",
        "reason": "a teammate's public handle",
    },
    "monitor.observed": {
        "todo_id": "t1",
        "result": "unchanged",
        "evidence_id": "ev-1",
        "next_at": "2026-01-01T00:10:00Z",
    },
    "turn.begun": {"turn_id": "turn-1", "todo_id": "t1", "agent_id": "a", "session_id": "s"},
    "turn.phased": {"turn_id": "turn-1", "phase": "write_back", "session_id": "s", "ref": "r"},
    "turn.settled": {"turn_id": "turn-1", "run_id": "run-1"},
    "handoff.prepared": {
        "handoff_id": "h1",
        "todo_id": "t1",
        "todo_revision": 3,
        "source_agent_id": "a",
        "source_session_id": "s",
        "note": {"work_summary": "W", "files_touched": [{"path": "a.py", "action": "read"}]},
    },
    "handoff.adopted": {
        "handoff_id": "h1",
        "todo_id": "t1",
        "grant": {
            "handoff_id": "h1",
            "todo_id": "t1",
            "todo_revision": 4,
            "source_agent_id": "a",
            "source_session_id": "s",
            "target_agent_id": "b",
            "target_session_id": "s2",
        },
    },
}


@pytest.fixture(scope="module")
def demo_events(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("demo")
    create_demo(root)
    store = FileStore(root)
    return [e for g in store.goal_ids() for e in store.read(g).events]


def pydantic_accepts(envelope: dict[str, Any]) -> bool:
    try:
        Envelope.model_validate(envelope)
        if envelope["type"] in EVENT_MODELS:
            validate_data(envelope["type"], envelope["data"])
    except (pydantic.ValidationError, TypeError, KeyError):
        return False
    return True


def schema_accepts(envelope: Any) -> bool:
    return VALIDATOR.is_valid(envelope)


# -- the file -------------------------------------------------------------------------------


def test_the_committed_schema_is_what_the_models_generate() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), (
        "schemas/event.schema.json is out of date: run python -m loopx.model.schema"
    )


def test_the_schema_is_valid_draft_2020_12_with_a_closed_envelope() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == "https://loopx.dev/schemas/event.schema.json"
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["type"] == "object"


def test_the_schema_and_the_envelope_model_name_the_same_fields() -> None:
    fields = Envelope.model_fields
    assert set(SCHEMA["properties"]) == set(fields)
    assert set(SCHEMA["required"]) == {n for n, f in fields.items() if f.is_required()}
    # `more` (the store's mark on all but the last event of a multi-event operation) is the
    # one optional field; every other envelope field is required.
    assert set(SCHEMA["required"]) == set(fields) - {"more"}


def test_every_event_type_has_a_data_definition() -> None:
    branches = {b["if"]["properties"]["type"]["const"]: b for b in SCHEMA["allOf"]}
    assert set(branches) == set(EVENT_MODELS)
    for event_type, model in EVENT_MODELS.items():
        ref = branches[event_type]["then"]["properties"]["data"]["$ref"]
        definition = SCHEMA["$defs"][ref.rsplit("/", 1)[-1]]
        assert set(definition["properties"]) == set(model.model_fields), event_type
        required = {n for n, f in model.model_fields.items() if f.is_required()}
        assert set(definition.get("required", [])) == required, event_type
        assert definition["additionalProperties"] is False


# -- envelopes ------------------------------------------------------------------------------


def test_every_demo_line_validates_against_both(demo_events: list[dict[str, Any]]) -> None:
    assert len(demo_events) > 40
    assert {e["type"] for e in demo_events} >= {"goal.created", "todo.claimed", "gate.opened"}
    for event in demo_events:
        errors = [e.message for e in VALIDATOR.iter_errors(event)]
        assert errors == [], (event["type"], errors)
        assert pydantic_accepts(event), event["type"]


def mutations(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name in event:
        missing = {k: v for k, v in event.items() if k != name}
        out.append((f"missing {name}", missing))
    bad_values: dict[str, list[Any]] = {
        "seq": [0, -1, "1", 1.5, None],
        "event_id": ["evt-XYZ", "evt-123", 7],
        "operation_id": ["", "has space", "-lead"],
        "op_hash": ["abc", "G" * 64],
        "type": ["Todo.Added", "todo", ""],
        "v": [0, "1"],
        "goal_id": ["Goal", "", "a/b"],
        "actor": [{"agent_id": "a"}, {"agent_id": "a", "session_id": "s", "extra": 1}, "a"],
        "recorded_at": ["2026-03-01 12:00:00", "yesterday", "2026-03-01T12:00:00+00:00"],
        "visibility": ["secret", "", None],
        "data": ["text", [], None],
        "prev": ["0" * 63, "x" * 64],
        "sum": ["", "A" * 64],
    }
    for name, values in bad_values.items():
        for value in values:
            out.append((f"{name}={value!r}", dict(event, **{name: value})))
    out.append(("extra field", dict(event, extra="x")))
    out.append(("wrong data for its type", dict(event, data={"nonsense": True})))
    return out


def test_broken_envelopes_are_refused_by_both(demo_events: list[dict[str, Any]]) -> None:
    samples = {e["type"]: e for e in demo_events}
    checked = 0
    for event in samples.values():
        for what, broken in mutations(event):
            assert not schema_accepts(broken), f"{event['type']}: schema accepted {what}"
            assert not pydantic_accepts(broken), f"{event['type']}: models accepted {what}"
            checked += 1
    assert checked > 300


def test_an_unknown_event_type_is_carried_by_both(demo_events: list[dict[str, Any]]) -> None:
    future = dict(demo_events[0], type="widget.frobbed", data={"anything": [1, 2]})
    assert schema_accepts(future) and pydantic_accepts(future)


# -- data, and the fast checker -------------------------------------------------------------


def all_samples(demo_events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = [(t, d) for t, d in SAMPLES.items()]
    out += [(e["type"], e["data"]) for e in demo_events if e["type"] in EVENT_MODELS]
    return out


def test_samples_cover_every_type() -> None:
    assert set(SAMPLES) == set(EVENT_MODELS)


def fast(event_type: str, data: Any) -> tuple[bool, Any]:
    try:
        return True, jsoncheck.check_data(event_type, copy.deepcopy(data))
    except jsoncheck.DataError as err:
        assert repr(data)[:40] not in str(err) or len(repr(data)) < 8
        return False, None


def slow(event_type: str, data: Any) -> tuple[bool, Any]:
    try:
        return True, validate_data(event_type, copy.deepcopy(data))
    except pydantic.ValidationError:
        return False, None


def schema_data(event_type: str, data: Any) -> bool:
    envelope = {
        "seq": 1,
        "event_id": "evt-0123456789abcdef",
        "operation_id": "op",
        "op_hash": "0" * 64,
        "type": event_type,
        "v": 1,
        "goal_id": "g",
        "actor": {"agent_id": "a", "session_id": "s"},
        "recorded_at": "2026-03-01T12:00:00Z",
        "visibility": "team",
        "data": data,
        "prev": "0" * 64,
        "sum": "0" * 64,
    }
    return VALIDATOR.is_valid(envelope)


def _needs_python(name: str, seen: set[str] | None = None) -> bool:
    """Whether definition `name` (or anything it refers to) has a Python-only check."""
    seen = seen if seen is not None else set()
    if name in seen:
        return False
    seen.add(name)
    text = json.dumps(SCHEMA["$defs"][name])
    if PYTHON_CHECK in text:
        return True
    refs = {part.split('"')[0] for part in text.split('"#/$defs/')[1:]}
    return any(_needs_python(ref, seen) for ref in refs)


def test_the_fast_checker_covers_every_type_without_python_only_checks() -> None:
    branches = {b["if"]["properties"]["type"]["const"]: b for b in SCHEMA["allOf"]}
    for event_type in EVENT_MODELS:
        ref = branches[event_type]["then"]["properties"]["data"]["$ref"].rsplit("/", 1)[-1]
        compiled = jsoncheck.compiled(event_type)
        assert (compiled is None) == _needs_python(ref), event_type
    assert jsoncheck.check_data("widget.frobbed", {}) is None


def test_a_python_only_check_is_marked_and_left_to_pydantic() -> None:
    from typing import Annotated

    from pydantic import AfterValidator, BaseModel, ConfigDict

    from loopx.model.schema import _annotate, _clean

    def no_dots(value: str) -> str:
        if ".." in value:
            raise ValueError("no dots")
        return value

    class Sample(BaseModel):
        model_config = ConfigDict(extra="forbid")
        path: Annotated[str, AfterValidator(no_dots)]

    schema = Sample.model_json_schema()
    _annotate(Sample, schema)
    schema = _clean(schema)
    assert schema["properties"]["path"][PYTHON_CHECK] == "no_dots"
    with pytest.raises(jsoncheck.Unsupported):
        jsoncheck._Compiler({"Sample": schema}).ref("Sample")
    plain = {"type": "object", "additionalProperties": False, "properties": {}}
    assert jsoncheck._Compiler({"Plain": plain}).ref("Plain")({}, "") == {}
    with pytest.raises(jsoncheck.Unsupported):
        jsoncheck._Compiler({"Open": {"type": "object"}}).ref("Open")


def test_valid_data_gives_the_same_normalised_result(demo_events: list[dict[str, Any]]) -> None:
    for event_type, data in all_samples(demo_events):
        ok, slow_out = slow(event_type, data)
        assert ok, event_type
        assert schema_data(event_type, data), event_type
        if jsoncheck.compiled(event_type) is None:
            continue
        fast_ok, fast_out = fast(event_type, data)
        assert fast_ok, event_type
        assert fast_out == slow_out, event_type
    # Defaults are filled in and None dropped, exactly as pydantic does.
    _, out = fast("todo.added", {"todo_id": "t", "title": "T", "acceptance": None})
    assert out == {
        "todo_id": "t",
        "title": "T",
        "role": "agent",
        "kind": "task",
        "priority": 2,
        "depends_on": [],
    }
    _, created = fast("goal.created", {"title": "T", "objective": "O"})
    assert created["policy"] == {"lease_seconds": 1800, "quota_unit": "runs"}
    assert created == validate_data("goal.created", {"title": "T", "objective": "O"})


def data_mutations(event_type: str, data: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """(what, broken data, whether the JSON Schema validator can see it too)."""
    model = EVENT_MODELS[event_type]
    out: list[tuple[str, Any, bool]] = [
        ("extra field", dict(data, surprise=1), True),
        ("not an object", [data], True),
    ]
    for name, info in model.model_fields.items():
        if info.is_required():
            out.append((f"missing {name}", {k: v for k, v in data.items() if k != name}, True))
            out.append((f"{name}=None", dict(data, **{name: None}), True))
        out.append((f"{name} of a wrong type", dict(data, **{name: {"x": [1]}}), True))
    for name, value in data.items():
        if isinstance(value, str):
            out.append((f"{name} too long", dict(data, **{name: value + "x" * 20_001}), True))
            # JSON Schema tools differ on `$` before a final newline; pydantic and the fast
            # checker both refuse it, which is what the write path relies on.
            if name.endswith("_id") or name in ("by", "authority", "kind", "revision"):
                out.append((f"{name} with a newline", dict(data, **{name: value + "\n"}), False))
        if isinstance(value, list):
            out.append((f"{name} too long", dict(data, **{name: value * 1001}), True))
        if isinstance(value, int) and not isinstance(value, bool):
            out.append((f"{name} negative", dict(data, **{name: -(10**9)}), True))
            out.append((f"{name} huge", dict(data, **{name: 10**12}), True))
    return out


def test_broken_data_is_refused_by_models_schema_and_fast_checker(
    demo_events: list[dict[str, Any]],
) -> None:
    checked = 0
    for event_type, data in all_samples(demo_events):
        for what, broken, schema_sees in data_mutations(event_type, data):
            ok, _ = slow(event_type, broken)
            if ok:
                # Not every mutation breaks every type (a list field may allow 1,000+ items,
                # an int field may have no upper bound): then all three must accept it.
                assert schema_data(event_type, broken), f"{event_type}: {what}"
                if jsoncheck.compiled(event_type) is not None:
                    assert fast(event_type, broken)[0], f"{event_type}: {what}"
                continue
            checked += 1
            if schema_sees:
                assert not schema_data(event_type, broken), f"{event_type}: schema took {what}"
            if jsoncheck.compiled(event_type) is not None:
                assert not fast(event_type, broken)[0], f"{event_type}: fast checker took {what}"
    assert checked > 400


def test_the_fast_checker_is_strict_about_json_types() -> None:
    for value in ("2", 2.0, True):
        ok, _ = fast("todo.added", {"todo_id": "t", "title": "T", "priority": value})
        assert not ok, value
    assert not fast(
        "gate.opened", {"gate_id": "g", "question": "Q", "authority": "a", "blocks_goal": 1}
    )[0]


def test_the_write_path_never_imports_pydantic(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from loopx.store.filestore import FileStore\n"
        "from loopx.engine.core import Context, load_state\n"
        "from loopx.engine.clock import FixedClock\n"
        "from loopx.engine import goals, todos, gates, evidence\n"
        "from loopx.engine.commands import AddEvidence, AddTodo, ClaimTodo, CreateGoal, OpenGate\n"
        f"s = FileStore({str(tmp_path)!r}); s.init()\n"
        "c = Context(s, FixedClock('2026-03-01T12:00:00Z'), 'a', 's')\n"
        "goals.create_goal(c, CreateGoal(goal_id='g', title='T', objective='O'))\n"
        "todos.add_todo(c, AddTodo(goal_id='g', title='x', todo_id='x'))\n"
        "todos.claim_todo(c, ClaimTodo(goal_id='g', todo_id='x'))\n"
        "gates.open_gate(c, OpenGate(goal_id='g', question='q', authority='a'))\n"
        "evidence.add_evidence(c, AddEvidence(goal_id='g', kind='test', summary='s'))\n"
        "load_state(s, 'g')\n"
        "assert 'pydantic' not in sys.modules, sorted(m for m in sys.modules if 'pyd' in m)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
