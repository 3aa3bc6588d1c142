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
