(window.loopxSearch = window.loopxSearch || []).push({
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
    }
  ],
  "schema": "loopx.search/v1",
  "truncated": 0
});
