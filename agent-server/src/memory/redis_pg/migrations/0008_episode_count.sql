-- Version 8: how many episodes each session holds, kept like `fact_count` (version 3).
--
-- Lexical recall ranks by BM25 (longterm::RECALL_SQL), whose inverse document frequency needs the
-- number of items it searches: `fact_count` for facts, `episode_count` for episodes. Counting a
-- session's episodes at recall time would read every one of them, and a session holds one per turn.
-- The triggers already run once per writing statement; they now count both kinds in the same
-- UPDATE. Episodes are never rewritten, but a keyed upsert could in principle change an item's kind
-- to or from 'episode', so the row trigger of version 5 counts that too.
ALTER TABLE agentwall_sessions
    ADD COLUMN episode_count bigint NOT NULL DEFAULT 0 CHECK (episode_count >= 0);
INSERT INTO agentwall_sessions AS s (session_id, episode_count)
    SELECT session_id, count(*) FROM agentwall_facts WHERE kind = 'episode' GROUP BY session_id
    ON CONFLICT (session_id) DO UPDATE SET episode_count = EXCLUDED.episode_count;

CREATE OR REPLACE FUNCTION agentwall_count_inserted_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s
       SET fact_count = s.fact_count + d.facts, episode_count = s.episode_count + d.episodes
      FROM (SELECT session_id,
                   count(*) FILTER (WHERE kind = 'fact') AS facts,
                   count(*) FILTER (WHERE kind = 'episode') AS episodes
              FROM new_facts WHERE kind = 'fact' OR kind = 'episode'
             GROUP BY session_id) AS d
     WHERE s.session_id = d.session_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION agentwall_count_deleted_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s
       SET fact_count = s.fact_count - d.facts, episode_count = s.episode_count - d.episodes
      FROM (SELECT session_id,
                   count(*) FILTER (WHERE kind = 'fact') AS facts,
                   count(*) FILTER (WHERE kind = 'episode') AS episodes
              FROM old_facts WHERE kind = 'fact' OR kind = 'episode'
             GROUP BY session_id) AS d
     WHERE s.session_id = d.session_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION agentwall_count_changed_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s
       SET fact_count = s.fact_count
           + CASE WHEN s.session_id = NEW.session_id AND NEW.kind = 'fact' THEN 1 ELSE 0 END
           - CASE WHEN s.session_id = OLD.session_id AND OLD.kind = 'fact' THEN 1 ELSE 0 END,
           episode_count = s.episode_count
           + CASE WHEN s.session_id = NEW.session_id AND NEW.kind = 'episode' THEN 1 ELSE 0 END
           - CASE WHEN s.session_id = OLD.session_id AND OLD.kind = 'episode' THEN 1 ELSE 0 END
     WHERE s.session_id IN (OLD.session_id, NEW.session_id);
    RETURN NULL;
END $$;
