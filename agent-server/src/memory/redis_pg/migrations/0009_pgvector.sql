-- Version 9: embeddings as pgvector's `vector`, so that semantic recall is computed by pgvector's
-- distance operators (and, for large sessions, found through an HNSW index) instead of by SQL
-- over `real[]` (version 7).
--
-- pgvector is required from this version on: a Postgres without it fails this migration, and
-- agent-server refuses to start, naming the extension (longterm::migration_failed). Creating it
-- needs a role allowed to (pgvector is not a trusted extension): on a managed Postgres an
-- administrator runs `CREATE EXTENSION vector` once, and this statement then finds it.
CREATE EXTENSION IF NOT EXISTS vector;

-- Existing embeddings are kept: `real[]` casts to `vector` exactly (both are 4-byte floats). The
-- column has no fixed dimension, since the embedding model is the deployment's choice; the HNSW
-- index is per dimension (longterm::ensure_vector_index). An empty array (never written by
-- agent-server) cannot be a vector and becomes NULL, which the backfill embeds again.
ALTER TABLE agentwall_facts ALTER COLUMN embedding TYPE vector
    USING CASE WHEN cardinality(embedding) > 0 THEN embedding::vector END;
