-- Version 2: recall no longer uses the GIN index on tsv.
-- Recall takes a session's own facts first and matches them against the query second
-- (longterm::recall), so that its cost depends on that session's size only: answering `tsv @@ q`
-- through this index read every matching fact of every session. Unused, the index only cost
-- every fact insert a GIN update.
DROP INDEX IF EXISTS agentwall_facts_tsv;
