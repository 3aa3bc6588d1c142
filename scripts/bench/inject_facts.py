"""Fills an agent-server's long-term memory through its control plane, for scale benchmarks:
SESSIONS sessions of FACTS facts each, 1,000 per POST /control/memory/inject (the largest batch
the server takes). Words come from a 5,000-word vocabulary, so recall has realistic postings.

    python3 scripts/bench/inject_facts.py http://127.0.0.1:8080 --sessions 1000 --facts 1000

Prints the facts stored and the rate. Standard library only."""

import argparse
import http.client
import json
import random
import sys
import time
import urllib.parse


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("endpoint")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--facts", type=int, default=1000, help="facts per session")
    parser.add_argument("--prefix", default="scale")
    args = parser.parse_args()

    url = urllib.parse.urlsplit(args.endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=120)
    rng = random.Random(7)
    word = lambda: f"w{rng.randrange(5000)}"
    stored = 0
    started = time.monotonic()
    for s in range(args.sessions):
        session = f"{args.prefix}-{s}"
        for first in range(0, args.facts, 1000):
            facts = [
                {
                    "text": f"Note {i}: the {word()} near the {word()} is {word()}.",
                    "key": f"note {i}",
                }
                for i in range(first, min(first + 1000, args.facts))
            ]
            body = json.dumps({"facts": facts})
            conn.request(
                "POST",
                "/control/memory/inject",
                body=body,
                headers={"Content-Type": "application/json", "X-Session-Id": session},
            )
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200:
                sys.exit(f"inject failed with {response.status}: {payload[:300]!r}")
            stored += sum(1 for f in json.loads(payload)["injected"] if f["current"])
        if (s + 1) % 100 == 0:
            print(f"  {s + 1}/{args.sessions} sessions", file=sys.stderr)
    elapsed = time.monotonic() - started
    print(f"stored {stored} facts in {elapsed:.1f} s ({stored / elapsed:,.0f} facts/s)")


if __name__ == "__main__":
    main()
