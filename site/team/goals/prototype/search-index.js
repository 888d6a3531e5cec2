(window.loopxSearch = window.loopxSearch || []).push({
  "audience": "team",
  "generator": "loopx 0.1.0",
  "items": [
    {
      "goal_id": "prototype",
      "href": "goals/prototype/index.html",
      "kind": "goal",
      "status": "achieved",
      "title": "Prototype the ledger"
    },
    {
      "goal_id": "prototype",
      "href": "goals/prototype/todos/bench-replay.html",
      "kind": "todo",
      "status": "done",
      "title": "Benchmark cold replay",
      "todo_id": "bench-replay"
    }
  ],
  "schema": "loopx.search/v1",
  "truncated": 0
});
