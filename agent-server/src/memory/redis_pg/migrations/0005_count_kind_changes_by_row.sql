-- Version 5: a change of kind is counted by a row trigger, and only when one happens.
--
-- Version 3 kept `fact_count` through updates with a statement trigger over transition tables. It
-- ran for EVERY update of facts, and captured every updated row first: each group commit restates
-- facts (longterm::update_facts), and that trigger cost about 60-100 µs per batch while finding
-- nothing to count (docs/benchmarks.md, "Ready tsqueries"). Only a keyed upsert that replaces a
-- fact by a rule or reminder, or the reverse, changes what a session counts; no statement moves a
-- fact to another session, but should one ever, it is counted too. A row trigger with a column
-- list and a WHEN condition queues nothing for any other update: the restatements, which set
-- neither column, skip it without even evaluating the condition.
DROP TRIGGER agentwall_facts_counted_on_update ON agentwall_facts;
DROP FUNCTION agentwall_count_updated_facts();

CREATE FUNCTION agentwall_count_changed_kind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agentwall_sessions AS s
       SET fact_count = s.fact_count
           + CASE WHEN s.session_id = NEW.session_id AND NEW.kind = 'fact' THEN 1 ELSE 0 END
           - CASE WHEN s.session_id = OLD.session_id AND OLD.kind = 'fact' THEN 1 ELSE 0 END
     WHERE s.session_id IN (OLD.session_id, NEW.session_id);
    RETURN NULL;
END $$;

CREATE TRIGGER agentwall_facts_counted_on_kind_change
    AFTER UPDATE OF kind, session_id ON agentwall_facts
    FOR EACH ROW
    WHEN (OLD.kind IS DISTINCT FROM NEW.kind OR OLD.session_id IS DISTINCT FROM NEW.session_id)
    EXECUTE FUNCTION agentwall_count_changed_kind();
