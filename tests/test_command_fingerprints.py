"""Idempotency fingerprints stay stable across versions.

An operation recorded by one version of loopx must replay (not come back
`operation_id_reused`) when a later version retries it with the same `--operation-id`: a user
may upgrade mid-retry. So every write command is run here through the CLI, on a pinned clock,
and the `op_hash` it records is compared with the value recorded before the typed commands
were introduced. A change to a command's canonical form fails here, by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from loopx.store.filestore import FileStore
from tests.conftest import run_cli

# (operation id, agent, arguments): every write command, in an order the ledger accepts.
SCRIPT: list[tuple[str, str, list[str]]] = [
    ("op-goal-create", "user", ["goal", "create", "--goal-id", "g", "--title", "G",
                                "--objective", "Ship it", "--acceptance", "works",
                                "--acceptance", "is fast", "--repository", "https://x.test/r",
                                "--lease-seconds", "600", "--quota", "9"]),
    ("op-goal-next", "user", ["goal", "create", "--goal-id", "h", "--title", "H",
                              "--objective", "Continue", "--predecessor", "g",
                              "--visibility", "public"]),
    ("op-agent", "agent-a", ["agent", "register", "--goal-id", "g", "--name", "A",
                             "--kind", "coding-agent"]),
    ("op-quota", "user", ["quota", "set", "--goal-id", "g", "--budget", "12", "--unit", "turns"]),
    ("op-note", "user", ["note", "add", "--goal-id", "g", "--text", "A lesson",
                         "--kind", "lesson", "--visibility", "team"]),
    ("op-add-a", "user", ["todo", "add", "--goal-id", "g", "--title", "A", "--todo-id", "a",
                          "--acceptance", "   ", "--priority", "1"]),
    ("op-add-b", "user", ["todo", "add", "--goal-id", "g", "--title", "B", "--todo-id", "b",
                          "--role", "user", "--kind", "review", "--depends-on", "a",
                          "--acceptance", "reviewed", "--visibility", "private"]),
    ("op-add-c", "user", ["todo", "add", "--goal-id", "g", "--title", "C", "--todo-id", "c",
                          "--predecessor", "a"]),
    ("op-update", "user", ["todo", "update", "--goal-id", "g", "--todo-id", "c", "--title",
                           "C2", "--priority", "3", "--no-depends", "--kind", "task"]),
    ("op-update-deps", "user", ["todo", "update", "--goal-id", "g", "--todo-id", "c",
                                "--depends-on", "a,b", "--acceptance", "done"]),
    ("op-claim", "agent-a", ["todo", "claim", "--goal-id", "g", "--todo-id", "a",
                             "--lease-seconds", "900"]),
    ("op-renew", "agent-a", ["todo", "renew", "--goal-id", "g", "--todo-id", "a"]),
    ("op-release", "agent-a", ["todo", "release", "--goal-id", "g", "--todo-id", "a",
                               "--reason", "later"]),
    ("op-block", "user", ["todo", "block", "--goal-id", "g", "--todo-id", "a",
                          "--reason", "waiting on x"]),
    ("op-unblock", "user", ["todo", "unblock", "--goal-id", "g", "--todo-id", "a"]),
    ("op-ev", "agent-a", ["evidence", "add", "--goal-id", "g", "--kind", "test",
                          "--summary", "green", "--ref", "https://ci.test/1",
                          "--revision", "abcdef1", "--todo-id", "a", "--file", "{body}"]),
    ("op-ev-bare", "agent-a", ["evidence", "add", "--goal-id", "g", "--kind", "note",
                               "--summary", "seen", "--workspace", "{plain}",
                               "--evidence-id", "ev-x", "--visibility", "team"]),
    ("op-complete", "agent-a", ["todo", "complete", "--goal-id", "g", "--todo-id", "a",
                                "--summary", "did it", "--evidence-id", "ev-1",
                                "--successor", "c"]),
    ("op-reopen", "user", ["todo", "reopen", "--goal-id", "g", "--todo-id", "a",
                           "--reason", "regressed"]),
    ("op-cancel", "user", ["todo", "cancel", "--goal-id", "g", "--todo-id", "a"]),
    ("op-gate", "user", ["gate", "open", "--goal-id", "g", "--question", "Ship?",
                         "--authority", "boss", "--blocks", "b", "--gate-id", "gate-x",
                         "--ask-again-at", "2026-03-02T00:00:00Z"]),
    ("op-gate-goal", "user", ["gate", "open", "--goal-id", "g", "--question", "Go?",
                              "--authority", "boss", "--visibility", "public"]),
    ("op-defer", "boss", ["gate", "resolve", "--goal-id", "g", "--gate-id", "gate-x",
                          "--resolution", "defer", "--rationale", "not yet",
                          "--ask-again-at", "2026-03-03T00:00:00Z"]),
    ("op-approve", "user", ["gate", "resolve", "--goal-id", "g", "--gate-id", "gate-x",
                            "--resolution", "approve", "--by", "boss"]),
    ("op-approve-goal", "boss", ["gate", "resolve", "--goal-id", "g", "--gate-id", "gate-2",
                                 "--resolution", "approve"]),
    ("op-run", "agent-a", ["run", "record", "--goal-id", "g", "--outcome", "progress",
                           "--todo-id", "c", "--summary", "half", "--evidence-id", "ev-1",
                           "--wait", "ci", "--quota-spent", "2"]),
    ("op-monitor", "user", ["monitor", "add", "--goal-id", "g", "--title", "CI", "--watch",
                            "ci:main", "--every", "60", "--backoff", "exponential", "--cap",
                            "600", "--todo-id", "m", "--depends-on", "b"]),
    ("op-monitor-2", "user", ["monitor", "add", "--goal-id", "g", "--title", "PR", "--watch",
                              "pr:7", "--every", "30", "--first-at", "2026-03-01T12:00:00Z"]),
    ("op-observe", "agent-a", ["monitor", "observe", "--goal-id", "g", "--todo-id", "todo-5",
                               "--result", "unchanged", "--summary", "still red",
                               "--ref", "https://ci.test/2", "--revision", "abcdef2"]),
    ("op-observe-2", "agent-a", ["monitor", "observe", "--goal-id", "g", "--todo-id", "todo-5",
                                 "--result", "changed", "--summary", "merged",
                                 "--then", "successor", "--successor-title", "Deploy",
                                 "--successor-id", "deploy", "--evidence-id", "ev-pr",
                                 "--evidence-visibility", "team"]),
    ("op-claim-c", "agent-a", ["todo", "claim", "--goal-id", "g", "--todo-id", "deploy"]),
    ("op-turn", "agent-a", ["turn", "begin", "--goal-id", "g", "--todo-id", "deploy",
                            "--turn-id", "t1"]),
    ("op-phase", "agent-a", ["turn", "phase", "--goal-id", "g", "--turn-id", "t1",
                             "--phase", "execute", "--ref", "branch x"]),
    ("op-turn-end", "agent-a", ["turn", "end", "--goal-id", "g", "--turn-id", "t1",
                                "--outcome", "progress", "--summary", "part",
                                "--quota-spent", "3", "--evidence-id", "ev-1",
                                "--run-id", "run-t"]),
    ("op-prepare", "agent-a", ["handoff", "prepare", "--goal-id", "g", "--todo-id", "deploy",
                               "--work-summary", "halfway", "--next-step", "finish",
                               "--tried", "x::failed::slow", "--file", "a.py::modified",
                               "--decision", "keep", "--question", "why?",
                               "--source-ref", "doc", "--target-agent-id", "agent-b",
                               "--workspace", "{plain}"]),
    ("op-adopt", "agent-b", ["handoff", "adopt", "--goal-id", "g", "--todo-id", "deploy",
                             "--lease-seconds", "1200", "--workspace", "{plain}"]),
    ("op-prepare-private", "agent-b", ["handoff", "prepare", "--goal-id", "g", "--todo-id",
                                       "deploy", "--from-context", "{context}",
                                       "--visibility", "private", "--workspace", "{plain}"]),
    ("op-redact", "user", ["redact", "field", "--goal-id", "g", "--entity", "todo",
                           "--entity-id", "b", "--field", "title", "--reason", "leak"]),
    ("op-redact-goal", "user", ["redact", "field", "--goal-id", "g", "--entity", "goal",
                                "--field", "objective", "--reason", "typo"]),
    ("op-close", "user", ["goal", "close", "--goal-id", "h", "--outcome", "abandoned",
                          "--reason", "merged into g"]),
]  # fmt: skip

# The op_hash each operation recorded before the commands were typed (do not regenerate
# these: a mismatch means a retry across the upgrade would be refused).
RECORDED: dict[str, str] = {
    "op-goal-create": "0132bdfec50a41aed26f7384628f886591d0019c3cbac4cf2b3f911333c2371d",
    "op-goal-next": "a51b5838d7eaddebde7fbf6908625d643262acebaeef9142133ed4dbbfe2d27f",
    "op-agent": "0022a179ee86bb34d5ec3691104e513be2d332664c2cbfff7e2a095794533691",
    "op-quota": "39db96a4267291a4491d79d3ade5dc0a3343009b78f797b16e42f1a7fa1dad71",
    "op-note": "c4ef732b5698a90b956bd02eb5a22551f15fec25e51175e3123e57af4939cad3",
    "op-add-a": "c19a64bd24ece3adc32cb67decfcafd699df65d41dee1315255277474a25180e",
    "op-add-b": "74bfccd98a29d951d4a96763cf3cd3b6bc989f31b9aaa78ef169a7fe1df6c3aa",
    "op-add-c": "1fcf043519207af5b0f9f0d9425cfa74c85774d1e9c9ca216892a026ec9e7165",
    "op-update": "7e1851779a90f3a02ad94f496697634f56fe38d5b2bd00989077108f43b7c41d",
    "op-update-deps": "8b19afc3b6040272ec427d871463cfd74b54a1e10118c82eab5b3ae953a98757",
    "op-claim": "1e4d9f21e5b5267cd0825ddf3e335bb8f59b935f0216e91584cbefdcf3b11d05",
    "op-renew": "08d9c012c74e8ed1f924c93b4dec04eca83d4a2b799261d6d48cb86315c4bb27",
    "op-release": "6a720388b04b5e64216c015ef8f08efc0081dba3390a6b42b7b5fe25d79ef265",
    "op-block": "9cc7a36cdbbae09046006aa3120708cc0c144d1cbdf023aa5bf631fca35ed586",
    "op-unblock": "bf79e92387caa441e89959d158ed08497ad29055b9b7d2991dda96e99dc1a6c2",
    "op-ev": "a56f3b62e00025c75a4736b6d960c36e31a553d32a1d61d6a1b59b63824d740b",
    "op-ev-bare": "2cbbc3a4130f7b990537da04b44180be30691e06cdf54989fb84eae7138c6901",
    "op-complete": "146e63cc2d15f82fc71de94fd819917c1142cab26beb478f753448471bdfcbd5",
    "op-reopen": "c66aa99ed9411a551dd3e2a55b5c7afd910d0441560520cec93d870e30d0033b",
    "op-cancel": "7cade8a3bae835cd40a5b952165a4ba48d088f0766914e0ed63310de7b689dc6",
    "op-gate": "0a496e3317a87e590ae8d78e577a3eada6c848010e224ae03873ac3cb31e31c0",
    "op-gate-goal": "0cf89aeca512a66cc3fbac9db07f1a8ee8daca3b97e2a015e611e8284918888b",
    "op-defer": "12ffa5497a9c0c62a710a66099a8fa924b411a671b1c10d6819e88b015fc9764",
    "op-approve": "ef93d61ad556be004053d2286a13620d23b4bffdf1e24f58dfca2e647db5d5ed",
    "op-approve-goal": "21176485da7aaecff1d0737f002592c798b9c1ce8cc1c71effb11e41311fab00",
    "op-run": "deafacce1935935b8a365c25beaa89cf97d9b9fdaec19be487abca91e0215fb3",
    "op-monitor": "3b545148169e779058d01c7e3de7945a71414d3a06ad91df08f3beb8e3680aac",
    "op-monitor-2": "eea318b021681c0524dc354b3a8361c7a0d255a1d44ac7c015413e3ac99f48ed",
    "op-observe": "593d90695d4096757a28f59ccb74dec89dcf8b4fe075f401aa59641700eef310",
    "op-observe-2": "e4c40917a148513d29c7c837a12fb3cbaa541bb00e0f9904a68e7093ffa8cb61",
    "op-claim-c": "8460312673edacadf1957ff7d8341f62fb29a917b438c9f92f4fa401dbd5ee99",
    "op-turn": "86942e4dc4b42eb9835e5478ec57f89e61a90ba8bd3f0bd085900cb4c09c68c7",
    "op-phase": "a3f2e45832eeb1a64c2442291e7de6d82cda995126369dfbb99c207823952d7b",
    "op-turn-end": "bc899d0de14af71f8c8bfb998cf1b76afbd667838db23a593061f48557404700",
    "op-prepare": "a0344ed7db290293a5a9f3f37e189db029eca1d744af5d43f9f44eb54cc5a63b",
    "op-adopt": "f313e8d6b5adfe297566f6c3979231983b2a584b57040656e0bdec6a493f34f9",
    "op-prepare-private": "e37bcc0916bd1bef5b086b16a745262e5595739deb2a1c876441b5d2e8709965",
    "op-redact": "62471e0ffc32519f7bd98b9c16cdd24b80b16e68c8bbba8e127bb79b49b8eacc",
    "op-redact-goal": "d56474a244c282149b21d3c87449d6cc0634e3527310d5a5aa0e52477e1d2af8",
    "op-close": "e9fb5f99d6668e40b8dc49401ffc3c80b8c0a0af0cc933c6a0211961085b28c3",
}


@dataclass
class Ledger:
    root: Path
    cwd: Path
    paths: dict[str, str]
    op_hash: dict[str, str]

    def argv(self, op_id: str, agent: str, args: list[str]) -> list[str]:
        argv = [self.paths.get(a, a) for a in args]
        return [*argv, "--root", str(self.root), "--operation-id", op_id, "--agent-id", agent]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    base = tmp_path_factory.mktemp("fingerprints")
    root, plain = base / "proj", base / "plain"  # plain: a folder outside git
    root.mkdir()
    plain.mkdir()
    (base / "body.txt").write_text("test output\n")
    (base / "context.json").write_text('{"work_summary": "private note", "next_steps": ["x"]}')
    paths = {"{body}": base / "body.txt", "{plain}": plain, "{context}": base / "context.json"}
    out = Ledger(root, plain, {k: str(v) for k, v in paths.items()}, {})
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    for op_id, agent, args in SCRIPT:
        done = run_cli(out.argv(op_id, agent, args), cwd=plain)
        assert done.exit_code == 0, (op_id, done.stderr)
    store = FileStore(root)
    for goal in ("g", "h"):
        for event in store.read(goal).events:
            out.op_hash[event["operation_id"]] = event["op_hash"]
    return out


def test_every_write_command_is_covered() -> None:
    names = {" ".join(args[:2]) for _, _, args in SCRIPT}
    assert len(names) == 27, sorted(names)


@pytest.mark.parametrize("op_id", [op for op, _, _ in SCRIPT])
def test_fingerprint_is_the_one_recorded_before(op_id: str, ledger: Ledger) -> None:
    assert ledger.op_hash[op_id] == RECORDED[op_id]


def test_a_retry_of_every_write_replays(ledger: Ledger) -> None:
    for op_id, agent, args in SCRIPT:
        done = run_cli([*ledger.argv(op_id, agent, args), "--format", "json"], cwd=ledger.cwd)
        assert done.exit_code == 0, (op_id, done.stderr)
        assert done.json()["status"] == "replayed", op_id
