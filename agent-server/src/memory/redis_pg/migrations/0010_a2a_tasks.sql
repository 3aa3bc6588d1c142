-- Version 10: A2A tasks (agent-server's A2A endpoint, `redis_pg::tasks`). One row per task, the
-- task as the client received it in `body`; the columns beside it are what tasks are looked up by.
-- Every lookup names the session (a listing, a `messageId` lookup, a reset), so both indexes lead
-- with it, and each holds its lookup's order too: a `messageId` lookup (every message) reads one
-- entry instead of walking the session's tasks. A `GetTask` reads by the primary key and the HTTP
-- layer checks the session.
CREATE TABLE agentwall_a2a_tasks (
    id          text PRIMARY KEY,
    session_id  text NOT NULL,
    message_id  text NOT NULL,
    state       text NOT NULL,
    updated_at  timestamptz NOT NULL,
    body        jsonb NOT NULL
);
CREATE INDEX agentwall_a2a_tasks_session ON agentwall_a2a_tasks (session_id, updated_at DESC, id DESC);
CREATE INDEX agentwall_a2a_tasks_message ON agentwall_a2a_tasks (session_id, message_id, updated_at DESC, id DESC);
