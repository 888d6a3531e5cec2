window.loopxSearch = {
  "audience": "team",
  "generator": "loopx 0.1.0",
  "items": [
    {
      "goal_id": "docs",
      "href": "goals/docs/index.html",
      "kind": "goal",
      "status": "active",
      "title": "Documentation pass"
    },
    {
      "goal_id": "docs",
      "href": "goals/docs/todos/readme.html",
      "kind": "todo",
      "status": "blocked",
      "title": "README walkthrough",
      "todo_id": "readme"
    },
    {
      "goal_id": "docs",
      "href": "goals/docs/todos/errors.html",
      "kind": "todo",
      "status": "open",
      "title": "Error code table",
      "todo_id": "errors"
    },
    {
      "goal_id": "docs",
      "href": "goals/docs/todos/screens.html",
      "kind": "todo",
      "status": "open",
      "title": "Screenshot of the status page",
      "todo_id": "screens"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/index.html",
      "kind": "goal",
      "status": "active",
      "title": "Launch loopx 0.1"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/ledger.html",
      "kind": "todo",
      "status": "done",
      "title": "Append-only ledger with hash chain",
      "todo_id": "ledger"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/engine.html",
      "kind": "todo",
      "status": "done",
      "title": "Governed write paths and receipts",
      "todo_id": "engine"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/cli.html",
      "kind": "todo",
      "status": "active",
      "title": "Command-line interface",
      "todo_id": "cli"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/status-page.html",
      "kind": "todo",
      "status": "open",
      "title": "Public status page",
      "todo_id": "status-page"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/workbench.html",
      "kind": "todo",
      "status": "open",
      "title": "Markdown workbench for review",
      "todo_id": "workbench"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/handoff.html",
      "kind": "todo",
      "status": "active",
      "title": "Handoff between agents",
      "todo_id": "handoff"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/release-notes.html",
      "kind": "todo",
      "status": "open",
      "title": "Write the release notes",
      "todo_id": "release-notes"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/publish.html",
      "kind": "todo",
      "status": "open",
      "title": "Publish 0.1 to the package index",
      "todo_id": "publish"
    },
    {
      "goal_id": "launch",
      "href": "goals/launch/todos/pick-license.html",
      "kind": "todo",
      "status": "open",
      "title": "Choose the license",
      "todo_id": "pick-license"
    },
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
};
