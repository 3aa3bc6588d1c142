-- The judge serve index: a rebuildable copy of what the run directories under --runs hold,
-- plus the simulations alive in the server. Nothing here is the source of truth.
--
-- Types adapted from the design documents (written for SQLite): JSON and TEXT holding JSON are
-- jsonb (queryable, validated on insert); TIMESTAMP and timestamps kept as TEXT are timestamptz
-- (every time the judge writes is UTC); the audit log's `success` (0 or 1 in SQLite) is boolean.

-- One row per run directory (every suite). `summary` is the line GET /runs serves, as is.
CREATE TABLE runs (
    id           text PRIMARY KEY,
    suite        text NOT NULL,
    state        text NOT NULL,
    created_at   timestamptz,
    score        double precision,
    score_label  text,
    summary      jsonb NOT NULL,
    manifest     jsonb NOT NULL,
    -- Sizes and modification times of the files the row derives from: a run is re-read only
    -- when this changes.
    fingerprint  text NOT NULL,
    indexed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idx_runs_suite ON runs(suite);

-- The agents table of docs/contracts/transcript.md: agent configurations. `config` never holds a key's value, only
-- the name of the environment variable it is read from. Ids derive from the configuration, so
-- the same configuration used by many simulations is one row.
CREATE TABLE agents (
    id                text PRIMARY KEY,
    name              text NOT NULL,
    description       text,
    config            jsonb NOT NULL,
    knowledge_base_id text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- App instances reference simulations(id): simulations created through
-- the API (kind `sim`) and the trials of `judge apps` runs (kind `apps`), as GET /simulations
-- shows them. `run_id` is not a foreign key: an API simulation exists before its run directory.
CREATE TABLE simulations (
    id                    text PRIMARY KEY,
    kind                  text NOT NULL,
    name                  text NOT NULL,
    state                 text NOT NULL,
    run_id                text,
    config                jsonb NOT NULL,
    error                 text,
    conversations_planned integer,
    conversations_done    integer NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL,
    started_at            timestamptz,
    finished_at           timestamptz,
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idx_simulations_run ON simulations(run_id);

-- Which agents took part in a simulation, and as what: `system` (the agent under test, the system agent of
-- docs/contracts/transcript.md), `user` (a persona), `injected` (an external endpoint playing a persona),
-- `user_simulator` and `judge` (LLM endpoints).
CREATE TABLE simulation_agents (
    simulation_id text NOT NULL REFERENCES simulations(id) ON DELETE CASCADE,
    agent_id      text NOT NULL REFERENCES agents(id),
    role          text NOT NULL,
    PRIMARY KEY (simulation_id, agent_id, role)
);
CREATE INDEX idx_simulation_agents_agent ON simulation_agents(agent_id);

-- docs/contracts/apps.md: app instances per simulation.
CREATE TABLE app_instances (
    id            text PRIMARY KEY,
    simulation_id text NOT NULL REFERENCES simulations(id) ON DELETE CASCADE,
    app_id        text NOT NULL,
    config        jsonb NOT NULL,
    state         jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- docs/contracts/apps.md: the audit log of every action. `seq` (added) is the position in the trial's
-- log, the total order of execution; `step` is the simulation step; `executed_at` is the
-- world's logical time, as audit.jsonl records it.
CREATE TABLE app_action_log (
    id              text PRIMARY KEY,
    app_instance_id text NOT NULL REFERENCES app_instances(id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    agent_id        text NOT NULL,
    step            bigint NOT NULL,
    action_name     text NOT NULL,
    params          jsonb NOT NULL,
    success         boolean NOT NULL,
    result          jsonb,
    error           text,
    executed_at     timestamptz DEFAULT now()
);

CREATE INDEX idx_app_instances_sim ON app_instances(simulation_id);
CREATE INDEX idx_action_log_instance ON app_action_log(app_instance_id);
CREATE INDEX idx_action_log_agent ON app_action_log(agent_id);
CREATE INDEX idx_action_log_step ON app_action_log(step);
