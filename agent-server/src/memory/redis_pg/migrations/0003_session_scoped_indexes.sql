-- Version 3: every read of one session's facts goes through an index that starts with the session,
-- and there is exactly one such index for each kind of read, so the planner has no worse choice.
--
-- Lexical recall of facts: a GIN index on (session_id, tsv). With btree_gin, `session_id = $1 AND
-- tsv @@ q` is one index scan that intersects the session's posting list with the query's, so a
-- recall reads the session's matching facts only. Version 1's index on `tsv` alone let the planner
-- answer `tsv @@ q` across every session (see version 2); without any, recall read all of the
-- session's facts (128 ms for a two-word query in a session of 100,000 facts, against 0.5 ms
-- through this index). btree_gin ships with Postgres (the contrib modules) and is a trusted
-- extension: a role with CREATE on the database may create it.
--
-- fastupdate off: with it on, new entries wait in a pending list of up to 4 MB that EVERY search
-- reads in full, whichever session it is for, until vacuum or a later insert merges it (10,000
-- pending facts made a recall 3.7 ms instead of 0.4). Off, each insert updates the index itself.
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX agentwall_facts_session_tsv
    ON agentwall_facts USING gin (session_id, tsv) WITH (fastupdate = off) WHERE kind = 'fact';

-- Standing items (rules and reminders), which recall returns whole, oldest first. This replaces
-- the B-tree on (session_id, kind, observed_at), which also covered facts: with it, the planner
-- estimated a session's size from the average session and, for a large one, scanned all its facts
-- through the B-tree instead of searching the GIN index. Reads of a session's whole memory
-- (snapshot, reset) combine the two indexes (`kind = 'fact' OR kind <> 'fact'`).
CREATE INDEX agentwall_facts_session_standing
    ON agentwall_facts (session_id, observed_at) WHERE kind <> 'fact';
DROP INDEX agentwall_facts_session_kind;

-- How many facts (kind 'fact') each session holds, kept by triggers in the writing transaction.
-- Recall chooses its plan by it (longterm::RECALL_SQL): a small session's facts are read whole
-- through the session's entry of the GIN index, which costs what the session holds; a large
-- session's are searched through the index with the query's words, which costs what matches. The
-- index search alone is slower for small sessions when the query has a word that is common across
-- ALL sessions: it then walks that word's posting tree (0.3 ms against 0.09 for 40 facts among
-- 80,000 holding the word), and the cost would grow with other sessions' data.
ALTER TABLE agentwall_sessions
    ADD COLUMN fact_count bigint NOT NULL DEFAULT 0 CHECK (fact_count >= 0);
INSERT INTO agentwall_sessions AS s (session_id, fact_count)
    SELECT session_id, count(*) FROM agentwall_facts WHERE kind = 'fact' GROUP BY session_id
    ON CONFLICT (session_id) DO UPDATE SET fact_count = EXCLUDED.fact_count;

-- Statement-level, with transition tables: one UPDATE per writing statement, whatever its rows.
-- Every write locked its sessions' rows first (longterm::lock_sessions, reset), so these updates
-- wait for nobody. A keyed upsert that replaces a fact fires the UPDATE trigger for it, which
-- counts a change of kind (a keyed rule replaced by a fact, or the reverse).
CREATE FUNCTION agentwall_count_inserted_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s SET fact_count = s.fact_count + d.n
        FROM (SELECT session_id, count(*) AS n FROM new_facts WHERE kind = 'fact'
              GROUP BY session_id) AS d
        WHERE s.session_id = d.session_id;
    RETURN NULL;
END $$;
CREATE FUNCTION agentwall_count_deleted_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s SET fact_count = s.fact_count - d.n
        FROM (SELECT session_id, count(*) AS n FROM old_facts WHERE kind = 'fact'
              GROUP BY session_id) AS d
        WHERE s.session_id = d.session_id;
    RETURN NULL;
END $$;
CREATE FUNCTION agentwall_count_updated_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s SET fact_count = s.fact_count + d.n
        FROM (SELECT session_id, sum(n) AS n
              FROM (SELECT session_id, 1 AS n FROM new_facts WHERE kind = 'fact'
                    UNION ALL
                    SELECT session_id, -1 FROM old_facts WHERE kind = 'fact') AS changes
              GROUP BY session_id) AS d
        WHERE s.session_id = d.session_id AND d.n <> 0;
    RETURN NULL;
END $$;
CREATE TRIGGER agentwall_facts_counted_on_insert AFTER INSERT ON agentwall_facts
    REFERENCING NEW TABLE AS new_facts
    FOR EACH STATEMENT EXECUTE FUNCTION agentwall_count_inserted_facts();
CREATE TRIGGER agentwall_facts_counted_on_delete AFTER DELETE ON agentwall_facts
    REFERENCING OLD TABLE AS old_facts
    FOR EACH STATEMENT EXECUTE FUNCTION agentwall_count_deleted_facts();
CREATE TRIGGER agentwall_facts_counted_on_update AFTER UPDATE ON agentwall_facts
    REFERENCING OLD TABLE AS old_facts NEW TABLE AS new_facts
    FOR EACH STATEMENT EXECUTE FUNCTION agentwall_count_updated_facts();
