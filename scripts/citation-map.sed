# Rewrites citations of documents the repository does not hold (the design documents, ADRs and
# issues the code was written from) into citations of the pages that describe the same contracts
# in the repository: docs/contracts/ and docs/results/. GNU sed, basic regular expressions:
#
#   git ls-files -z '*.rs' '*.md' '*.sh' '*.py' '*.yml' '*.yaml' '*.html' '*.toml' '*.sql' '*.mjs' \
#     | xargs -0 sed -i -f scripts/citation-map.sed
#   scripts/check-citations.sh                     # then lists what is left (nothing, today)
#
# Order matters: citations split over two lines first, then phrases whose wording changes, then
# "<document>'s <noun>" as "the <noun> of <page>", then bare citations as the page's path.
#
#   000 agent injection  -> docs/contracts/agent-injection.md
#   001 run log          -> docs/contracts/run-log.md
#   002 API wall         -> docs/contracts/api-wall.md
#   003 transcript       -> docs/contracts/transcript.md
#   004 simulated apps   -> docs/contracts/apps.md   (ADR-017 is the same document)

# --- Split over two lines ---------------------------------------------------------------------
/(design documents 000 and$/{N;s|(design documents 000 and\n//! 004)|(docs/contracts/agent-injection.md and\n//! docs/contracts/apps.md)|}
/(document 004's and$/{N;s|(document 004's and\n//! document 003's agents table)|(the apps' tables of docs/contracts/apps.md and\n//! the agents table of docs/contracts/transcript.md)|}
/(document 003's agents$/{N;s|(document 003's agents\n//! table)|(the agents table of\n//! docs/contracts/transcript.md)|}
/(document 000's$/{N;s|(document 000's\n\([[:space:]]*\)/// `simulation_config_hash`)|(the `simulation_config_hash` of\n\1/// docs/contracts/agent-injection.md)|}
/with its outcome (document$/{N;s|(document\n//! 004, REQ-05)\. |(docs/contracts/apps.md).\n//! |}
/validates document$/{N;s|validates document\n000's YAML/JSON|validates the YAML/JSON of\ndocs/contracts/agent-injection.md|}
/(the agent under test, document$/{N;s|document\n-- 003's system agent)|the system agent of\n-- docs/contracts/transcript.md)|}
/(design documents$/{N;s|(design documents\n//! 000, 001 and 003)|(docs/contracts/agent-injection.md,\n//! docs/contracts/run-log.md and docs/contracts/transcript.md)|}
/and document 001's$/{N;s|document 001's\n//! plain-text log|the plain-text log of\n//! docs/contracts/run-log.md|}
/written as design document$/{N;s|written as design document\n003's JSON transcript|written as the JSON transcript of\ndocs/contracts/transcript.md|}

# --- Phrases reworded -------------------------------------------------------------------------
s|(design document 004, ADR-017)|(docs/contracts/apps.md)|g
s|Document 004's \(E2E-0[0-9]\)\.|End-to-end scenario \1 of docs/contracts/apps.md.|g
s|Document 004's \(E2E-0[0-9]\) |End-to-end scenario \1 of docs/contracts/apps.md, |g
s|Document 004's end-to-end scenarios E2E|The end-to-end scenarios of docs/contracts/apps.md, E2E|g
s|Document 004's app endpoints of `judge serve`|The app endpoints (docs/contracts/apps.md) of `judge serve`|g
s|Document 004 references simulations(id) without defining it:|App instances reference simulations(id):|g
s|document 004's `success INTEGER -- 0 or 1` is boolean|the audit log's `success` (0 or 1 in SQLite) is boolean|g
s|document 000's failure table|the failure handling of docs/contracts/agent-injection.md|g
s|`suites/sim/` (issue 6) runs|`suites/sim/` runs|g
s|issue 8's load figures|the load figures of docs/results/load.md|g
s|(issue 8's "|(the target of docs/benchmarks.md: "|g
s|(issue 8: |(the target of docs/benchmarks.md: |g
s|Load benchmarks of issue 8,|Load benchmarks (docs/results/load.md),|g
s|Issue 8's targets|The performance targets|g
s|issue 8's targets|the performance targets|g
s| (issue [0-9]\+, \([a-z]* pass\))| (\1)|g
s| (issue [0-9]\+)||g

# --- "<document>'s <noun>": the noun of the page ----------------------------------------------
s#\(Design document\|Document\) 000's \(YAML shape\|YAML configuration\|YAML or JSON\|YAML\|shape\|body\|benchmark mode\|failure semantics\|configuration file\|injection endpoints\|JSON request and response\|`[a-z_.]*`\)#The \2 of docs/contracts/agent-injection.md#g
s#\(design \)\?document 000's \(YAML shape\|YAML configuration\|YAML or JSON\|YAML\|shape\|body\|benchmark mode\|failure semantics\|configuration file\|injection endpoints\|JSON request and response\|`[a-z_.]*`\)#the \2 of docs/contracts/agent-injection.md#g
s#\(Design document\|Document\) 001's \(format\|single-turn mode\|log\|evaluator\)#The \2 of docs/contracts/run-log.md#g
s#\(design \)\?document 001's \(format\|single-turn mode\|log\|evaluator\)#the \2 of docs/contracts/run-log.md#g
s#\(Design document\|Document\) 003's \(JSON transcript\|agents table\|shape\|system agent\)#The \2 of docs/contracts/transcript.md#g
s#\(design \)\?document 003's \(JSON transcript\|agents table\|shape\|system agent\)#the \2 of docs/contracts/transcript.md#g
s#\(Design document\|Document\) 004's \(simulated-application framework\|example configuration\|app endpoints\|endpoints\|tables\|app instance\|validation checklist\|`[a-z_.]*`\)#The \2 of docs/contracts/apps.md#g
s#\(design \)\?document 004's \(simulated-application framework\|example configuration\|app endpoints\|endpoints\|tables\|app instance\|validation checklist\|`[a-z_.]*`\)#the \2 of docs/contracts/apps.md#g

# --- "a document NNN <thing>": the thing, then the page ---------------------------------------
s#\(a\|the\|The\) document 001 log#\1 run log (docs/contracts/run-log.md)#g
s#document 001 log#run log (docs/contracts/run-log.md)#g
s#\(a\|the\|The\) document 003 transcript#\1 transcript (docs/contracts/transcript.md)#g
s#\(a\|the\|The\) document 003 JSON#\1 transcript JSON (docs/contracts/transcript.md)#g

# --- Bare citations: the page's path ----------------------------------------------------------
s#\([Dd]esign \)\?[Dd]ocument 000#docs/contracts/agent-injection.md#g
s#\([Dd]esign \)\?[Dd]ocument 001#docs/contracts/run-log.md#g
s#\([Dd]esign \)\?[Dd]ocument 002#docs/contracts/api-wall.md#g
s#\([Dd]esign \)\?[Dd]ocument 003#docs/contracts/transcript.md#g
s#\([Dd]esign \)\?[Dd]ocument 004#docs/contracts/apps.md#g
s#, ADR-017##g
s#ADR-017#docs/contracts/apps.md#g
