-- Version 6: provenance. Each fact keeps the ids of the turns it came from (`X-Turn-Id`), oldest
-- first; a restatement adds its own. Not indexed: only read with the fact, so a restatement that
-- keeps its text still updates the row HOT.
ALTER TABLE agentwall_facts ADD COLUMN source_turn_ids text[] NOT NULL DEFAULT '{}';
