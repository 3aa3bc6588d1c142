# Recall@k of an agent-server whose memory `judge membench --protocol chat` has filled, asked
# again: for every LoCoMo question of the finished run (its questions and evidence), what
# POST /control/memory/recall returns at the question's time (an hour after the last session, as
# the judge asks it). Lets a ranking change be measured on the same stored memory without
# ingesting it again.
#   python3 scripts/bench/membench-recall.py PORT RUN_DIR '{"conv-26": "<session id>", ...}'
# The session ids are in the server's log (`session.id=`). Categories 1-4 match the judge's
# recall@k within about a point; category 5 (adversarial) is counted differently.
import json, glob, sys, datetime, urllib.request, concurrent.futures
port, run, sessmap = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
data = {c["sample_id"]: c for c in json.load(open("/work/shared/datasets/locomo10.json"))}
def qtime(conv):
    c = data[conv]["conversation"]
    dates = [datetime.datetime.strptime(v, "%I:%M %p on %d %B, %Y") for k, v in c.items() if k.endswith("_date_time")]
    return (max(dates) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
def recall(conv, text):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/control/memory/recall",
        data=json.dumps({"text": text, "limit": 20}).encode(),
        headers={"content-type": "application/json", "x-session-id": sessmap[conv], "x-mock-time": qtime(conv)})
    return json.load(urllib.request.urlopen(req))["items"]
def at(items, ev, k):
    named = set()
    for i in items[:k]: named.update(i["source_turn_ids"])
    return sum(e in named for e in ev) / len(ev)
qs = []
for f in glob.glob(f"{run}/tests/*.json"):
    for q in json.load(open(f))["questions"]:
        if q["evidence"]: qs.append(q)
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    res = list(ex.map(lambda q: recall(q["conversation"], q["asked"]), qs))
cats = {}
for q, items in zip(qs, res):
    for k in (5, 8, 20):
        cats.setdefault((q["category"], k), []).append(at(items, q["evidence"], k))
        cats.setdefault(("all", k), []).append(at(items, q["evidence"], k))
        if q["category"] in "1234": cats.setdefault(("1-4", k), []).append(at(items, q["evidence"], k))
for c in ["1", "2", "3", "4", "5", "1-4", "all"]:
    print(c, " / ".join(f"{100*sum(cats[(c,k)])/len(cats[(c,k)]):.0f}" for k in (5, 8, 20)))
