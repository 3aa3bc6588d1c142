-- Version 4: restated facts are updated in place, HOT.
--
-- A restatement (memory::Restatement, longterm::update_facts) changes a fact's time, importance
-- and source, and keeps its text. Postgres can then update the row HOT, a new version on the
-- same page with no new index entries, but only if no indexed column changes. The standing index
-- covered observed_at, so every restatement was a full update with new entries in every index,
-- the full-text one included (one per word). Recall sorts a session's few standing items itself
-- (row_number in longterm::RECALL_SQL), so the index needs the session only.
CREATE INDEX agentwall_facts_session_standing_v4
    ON agentwall_facts (session_id) WHERE kind <> 'fact';
DROP INDEX agentwall_facts_session_standing;
ALTER INDEX agentwall_facts_session_standing_v4 RENAME TO agentwall_facts_session_standing;

-- A HOT update needs room on the row's page; leave a tenth of each new page for them.
ALTER TABLE agentwall_facts SET (fillfactor = 90);
