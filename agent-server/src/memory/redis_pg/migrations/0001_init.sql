-- Long-term memory of the redis+postgres backend, version 1.
-- Applied by longterm::migrate inside one transaction that holds an advisory lock, so it runs
-- exactly once per database however many servers start at the same time.

-- One row per session ever seen. It outlives a reset on purpose: `epoch` counts resets, and a turn
-- that read its context under an older epoch must be refused. Turns lock this row (FOR UPDATE via
-- an upsert), which serialises the writes of one session against each other and against reset.
CREATE TABLE agentwall_sessions (
    session_id text PRIMARY KEY,
    epoch      bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    -- Incremented by every turn under the row lock; orders working-memory items of turns that
    -- carry the same session-clock time, whichever server wrote them.
    turn_seq   bigint NOT NULL DEFAULT 0
);

CREATE TABLE agentwall_facts (
    id           uuid PRIMARY KEY,
    -- Insertion order: the tie-breaker when two facts share an observed_at.
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    session_id   text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('fact', 'rule', 'reminder')),
    fact_key     text,
    body         text NOT NULL,
    data         jsonb,
    -- timestamptz keeps microseconds; observed_ns keeps the remaining nanoseconds so that a
    -- session-clock time round-trips exactly.
    observed_at  timestamptz NOT NULL,
    observed_ns  integer NOT NULL DEFAULT 0 CHECK (observed_ns BETWEEN 0 AND 999),
    importance   real NOT NULL,
    source       text NOT NULL CHECK (source IN ('extracted', 'promoted', 'injected')),
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, body)) STORED
);

-- At most one current fact per (session, key): a safety net under the supersession logic.
CREATE UNIQUE INDEX agentwall_facts_session_key
    ON agentwall_facts (session_id, fact_key) WHERE fact_key IS NOT NULL;
-- Standing items, snapshots and resets scan one session.
CREATE INDEX agentwall_facts_session_kind
    ON agentwall_facts (session_id, kind, observed_at);
-- Lexical recall.
CREATE INDEX agentwall_facts_tsv ON agentwall_facts USING gin (tsv);
