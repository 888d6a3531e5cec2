(window.loopxSearch = window.loopxSearch || []).push({
  "audience": "public",
  "generator": "loopx 0.1.0",
  "items": [
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
    }
  ],
  "schema": "loopx.search/v1",
  "truncated": 0
});
