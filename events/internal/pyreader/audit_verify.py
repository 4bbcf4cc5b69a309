"""An outside verifier of Argosy's audit chains.

It knows Argosy only through docs/projector.md ("Audit chain" and "Read
API"), never through the Go code, and uses nothing but Python's standard
library. Over the read API of a projector or a hub it
  - reads every audit entry as stored, a page at a time, from
    GET /api/v1/audit/chain;
  - checks each partition's chain: offsets that only grow, each prevHash
    equal to the hash of the entry before (empty for the first), each hash
    equal to the documented hash of the entry's fields, with `before` and
    `after` in RFC 8785 canonical JSON;
  - reads the newest entries of the audit history, GET /api/v1/audit, and
    checks that each is in its chain with the same hashes and fields, and
    that the actor shown for a change made through the API is the caller
    that the chained record of that call names.

It prints one line per problem on stderr and a JSON verdict on stdout,
shaped as GET /api/v1/audit/verify's answer plus what it counted, and exits
0 when everything holds, 1 when a chain is broken or the history disagrees
with the chains, and 2 when it could not check.
"""

import argparse
import hashlib
import json
import math
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

API_CALL = "io.argosy.hub.audit.recorded.v1"
REORDERED = "prevHash does not match the previous entry's hash (an entry was removed, inserted or reordered)"
CHANGED = "hash does not match the entry's content (the entry was changed)"
OUT_OF_ORDER = "offsets out of order"


class Unreadable(Exception):
    """The API did not answer as documented."""


# RFC 8785, the JSON Canonicalization Scheme: objects with their members
# sorted by the UTF-16 code units of their names, no whitespace, strings
# escaped as ECMAScript's JSON.stringify does, numbers as IEEE 754 doubles
# written as ECMAScript's Number.prototype.toString writes them.

def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return jcs_number(v)
    if isinstance(v, str):
        return jcs_string(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: lone_surrogates(k).encode("utf-16-be"))
        return "{" + ",".join(jcs_string(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise Unreadable(f"not a JSON value: {v!r}")


def lone_surrogates(s):
    # A lone surrogate escape (\ud800) is no character; JSON decoders put
    # U+FFFD in its place.
    return re.sub("[\ud800-\udfff]", "\ufffd", s)


SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def jcs_string(s):
    out = ['"']
    for c in lone_surrogates(s):
        if c in SHORT:
            out.append(SHORT[c])
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def jcs_number(x):
    f = float(x)  # an integer too large for a double raises OverflowError
    if math.isinf(f) or math.isnan(f):
        raise Unreadable(f"number {x!r} has no IEEE 754 double")
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    r = repr(abs(f))  # the shortest digits that read back as f
    mant, _, exp = r.partition("e")
    whole, _, frac = mant.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)  # digits before the point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * -n + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + s


def json_field(e, name):
    """before or after as hashed: empty when absent or null."""
    v = e.get(name)
    return "" if v is None else jcs(v)


def entry_hash(prev, e, actor):
    fields = [prev, e["topic"], str(e["partition"]), str(e["offset"]), e["at"],
              e["eventId"], e["type"], e.get("cluster", ""), e.get("kind", ""),
              e.get("namespace", ""), e.get("name", ""), str(e.get("generation", 0)),
              actor, json_field(e, "before"), json_field(e, "after")]
    if e.get("refused"):  # a refused replay's reason, hashed only when there is one
        fields.append(e["refused"])
    h = hashlib.sha256()
    for f in fields:
        b = f.encode("utf-8")
        h.update(str(len(b)).encode() + b":" + b + b"\n")
    return h.hexdigest()


class API:
    def __init__(self, server, token):
        self.server, self.token = server.rstrip("/"), token

    def get(self, path, **params):
        url = self.server + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise Unreadable(f"GET {url}: {err.code} {err.read()[:300]!r}") from err
        except (urllib.error.URLError, ValueError) as err:
            raise Unreadable(f"GET {url}: {err}") from err

    def chains(self, page):
        """Every entry as stored, by topic, partition and offset."""
        out, after = {}, None
        while True:
            params = {"limit": page}
            if after:
                params["after"] = after
            items = self.get("/api/v1/audit/chain", **params)["items"]
            for e in items:
                out.setdefault((e["topic"], e["partition"]), []).append(e)
            if len(items) < page:
                return out
            last = items[-1]
            after = f"{last['topic']}/{last['partition']}/{last['offset']}"


def check_chain(entries):
    """Checks one partition's chain; returns its verdict."""
    topic, partition = entries[0]["topic"], entries[0]["partition"]
    check = {"topic": topic, "partition": partition, "entries": 0}
    prev = None
    for e in entries:
        check["entries"] += 1
        reason = None
        if prev is not None and e["offset"] <= prev["offset"]:
            reason = OUT_OF_ORDER
        elif e["prevHash"] != (prev["hash"] if prev else ""):
            reason = REORDERED
        elif entry_hash(e["prevHash"], e, e.get("actor", "")) != e["hash"]:
            reason = CHANGED
        if reason:
            check["broken"] = {"topic": topic, "partition": partition, "offset": e["offset"], "reason": reason}
            return check
        prev = e
    check["head"] = prev["hash"]
    return check


def callers(chains):
    """Who made each event through the API: the chained record of the
    earliest call (by log time, then request id) that names it."""
    calls = {}
    for entries in chains.values():
        for e in entries:
            if e["type"] != API_CALL or not isinstance(e.get("after"), dict):
                continue
            call = e["after"]
            for ev in call.get("eventIds") or []:
                calls.setdefault(ev, []).append((instant(e["at"]), call.get("requestId", ""), call.get("actor", "")))
    return {ev: min(cs)[2] for ev, cs in calls.items()}


def instant(at):
    """An RFC 3339 UTC time as (seconds part, nanoseconds), for ordering."""
    m = re.fullmatch(r"(.{19})(?:\.(\d{1,9}))?Z", at)
    if not m:
        raise Unreadable(f"time {at!r} is not RFC 3339 in UTC")
    return m.group(1), int((m.group(2) or "").ljust(9, "0"))


def check_history(listed, chains):
    """Checks the entries the audit history shows against the chains."""
    stored = {(e["topic"], e["partition"], e["offset"]): e for es in chains.values() for e in es}
    who = callers(chains)
    problems, joined = [], 0
    for e in listed:
        pos = (e["topic"], e["partition"], e["offset"])
        s = stored.get(pos)
        where = "%s/%d/%d" % pos
        if s is None:
            problems.append(f"{where}: in the history, in no chain")
            continue
        # The hash covers an entry's own actor, which only API calls have;
        # the history shows a change with its caller's, joined when read.
        own = e.get("actor", "") if e["type"] == API_CALL else ""
        if (e["hash"], e["prevHash"]) != (s["hash"], s["prevHash"]) or entry_hash(e["prevHash"], e, own) != e["hash"]:
            problems.append(f"{where}: the history's entry is not the chained one")
        elif e["type"] != API_CALL and e.get("actor", "") != who.get(e["eventId"], ""):
            problems.append(f"{where}: the history names {e.get('actor', '')!r} as the actor, "
                            f"the chained API call {who.get(e['eventId'], '')!r}")
        elif e["type"] != API_CALL and e.get("actor"):
            joined += 1
    return problems, joined


def verify(api, page, history):
    chains = api.chains(page)
    verdict = {"ok": True, "partitions": []}
    for key in sorted(chains, key=lambda k: (k[0].encode("utf-8"), k[1])):
        c = check_chain(chains[key])
        verdict["partitions"].append(c)
        if "broken" in c and verdict["ok"]:
            verdict["ok"], verdict["broken"] = False, c["broken"]
    listed = api.get("/api/v1/audit", limit=history)["items"] if history else []
    problems, joined = check_history(listed, chains)
    types = {}
    for es in chains.values():
        for e in es:
            types[e["type"]] = types.get(e["type"], 0) + 1
    verdict.update(types=types, noCluster=sum(1 for es in chains.values() for e in es if not e.get("cluster")),
                   history=len(listed), joinedActors=joined, historyProblems=problems)
    return verdict


def check_cases(path):
    """Checks this file's canonical form against cases: JSON texts and the
    canonical form each must have. Returns how many failed."""
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    failed = 0
    for c in cases:
        got = jcs(json.loads(c["in"]))
        if got != c["out"]:
            failed += 1
            print(f"canonical form of {c['in']!r}: {got!r}, want {c['out']!r}", file=sys.stderr)
    print(json.dumps({"cases": len(cases), "failed": failed}))
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", help="the read API's base URL, such as http://127.0.0.1:8080")
    ap.add_argument("--cases", help="check the canonical form against this file's cases instead")
    ap.add_argument("--token", default="", help="a bearer token, for a hub")
    ap.add_argument("--page", type=int, default=1000, help="entries per request (1 to 1000)")
    ap.add_argument("--history", type=int, default=1000,
                    help="how many of the newest entries of GET /api/v1/audit to check against the chains (0 for none)")
    args = ap.parse_args()
    if args.cases:
        return 1 if check_cases(args.cases) else 0
    if not args.server:
        ap.error("--server or --cases is required")
    try:
        verdict = verify(API(args.server, args.token), args.page, args.history)
    except (Unreadable, KeyError, TypeError, OverflowError) as err:
        print(f"cannot check: {err}", file=sys.stderr)
        return 2
    if "broken" in verdict:
        b = verdict["broken"]
        print(f"broken: {b['topic']} partition {b['partition']} at offset {b['offset']}: {b['reason']}", file=sys.stderr)
    for p in verdict["historyProblems"]:
        print(p, file=sys.stderr)
    print(json.dumps(verdict))
    return 0 if verdict["ok"] and not verdict["historyProblems"] else 1


if __name__ == "__main__":
    sys.exit(main())
