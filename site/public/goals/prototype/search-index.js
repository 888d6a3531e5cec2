(window.loopxSearch = window.loopxSearch || []).push({
  "audience": "public",
  "generator": "loopx 0.1.0",
  "items": [
    {
      "goal_id": "prototype",
      "href": "goals/prototype/index.html",
      "kind": "goal",
      "status": "achieved",
      "title": "Prototype the ledger"
    }
  ],
  "schema": "loopx.search/v1",
  "truncated": 0
});
