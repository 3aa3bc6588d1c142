-- Version 7: episodes and embeddings.
--
-- Episodes are a fourth kind of long-term item: every turn as it was said, never rewritten.
-- They share the table (reset, snapshots and inject treat them like any item) but not its recall
-- paths: recall reads standing items through their own index now, since the old standing index
-- (`kind <> 'fact'`) also covers episodes, which a session may hold thousands of; it stays for
-- reset and snapshots, which read every kind. Episodes are searched through their own
-- session-scoped full-text index, as facts are through theirs (migration 3).
ALTER TABLE agentwall_facts DROP CONSTRAINT agentwall_facts_kind_check;
ALTER TABLE agentwall_facts ADD CONSTRAINT agentwall_facts_kind_check
    CHECK (kind IN ('fact', 'rule', 'reminder', 'episode'));

CREATE INDEX agentwall_facts_session_rules
    ON agentwall_facts (session_id) WHERE kind IN ('rule', 'reminder');
CREATE INDEX agentwall_facts_session_episode_tsv
    ON agentwall_facts USING gin (session_id, tsv) WITH (fastupdate = off)
    WHERE kind = 'episode';

-- The item's embedding, L2-normalised; NULL until it is embedded (or with semantic recall off).
-- A plain array, since stock Postgres has no vector type: similarity is computed over a
-- session's rows (longterm::VECTOR_SQL).
ALTER TABLE agentwall_facts ADD COLUMN embedding real[];
