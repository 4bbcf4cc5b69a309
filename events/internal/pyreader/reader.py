"""An outside reader of Argosy's topics.

It knows Argosy only through docs/design.md and the published JSON Schemas:
the catalogue table, the partitioner, the wire format and the signature
construction are all taken from the document, never from the Go code. It
reads every record of every topic it is given with a stock Kafka client
(confluent-kafka) and the CloudEvents SDK, and checks that each one
  - was appended at the broker's time (LogAppendTime);
  - is on the partition the documented partitioner gives its key;
  - is a CloudEvent whose ce_partitionkey is its record key;
  - is of a catalogued type, on its type's topic;
  - has data valid against its type's JSON Schema, which its dataschema,
    when it has one, names;
  - carries a signature that verifies, by the documented construction, in
    either form (the compact sig or the DSSE dssematerial),
    with a key the trust topic (or the out-of-band anchor) makes valid at
    the record's log time and that may sign that type about that subject;
and, per topic, what the document promises of it (desired-state copies
name their config record; dead letters name an original they copy).

It also verifies the committed golden samples, structured mode and the
legacy desired-state copies among them, against the keys beside them.

It prints one line per failure and a JSON summary, and exits 1 if any
record failed.
"""

import argparse
import base64
import datetime
import hashlib
import json
import re
import sys
import time
from pathlib import Path

import jsonschema
from cloudevents.core.bindings import kafka as cekafka
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, TopicPartition
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

PAYLOAD_TYPE = "https://cloudevents.io/verifiability/dsse/v0.1"
SIG_VERSION = 1
SIG_ENTRY = 16 + 64  # key id, Ed25519 signature
# A batch of one cluster's status deltas: the batch and every delta in it
# name the cluster of the event's subject.
BATCH_TYPE = "io.argosy.status.applications.changed.v1"
CORE = ["id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject", "time"]
MAX_AGE = datetime.timedelta(days=7)
MAX_SKEW = datetime.timedelta(minutes=5)
TRUST_MAX_AGE = datetime.timedelta(minutes=10)
DLQ_HEADERS = ["argosy_dlq_reason", "argosy_dlq_error", "argosy_dlq_topic",
               "argosy_dlq_partition", "argosy_dlq_offset", "argosy_dlq_time"]


class Refused(Exception):
    """A record breaks the contract."""


def sha256(b):
    return hashlib.sha256(b).digest()


def b64(s):
    return base64.b64decode(s, validate=True)


# --- What the document says -------------------------------------------------


def catalogue(design):
    """The event catalogue table of design.md: type -> (topic, signer)."""
    out = {}
    for line in design.splitlines():
        m = re.match(r"^\| `(io\.argosy\.[a-z.0-9]+)` \| ([a-z]+) \| ([a-z]+) \|", line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    if not out:
        raise SystemExit("no catalogue table in design.md")
    return out


def murmur2(data):
    """Apache Kafka's murmur2, as an unsigned 32-bit value."""
    m = 0x5BD1E995
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    for i in range(len(data) // 4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail, rest = len(data) & ~3, len(data) % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def partition_of(key, partitions, pin=None):
    """partition = toPositive(murmur2(utf8(key))) mod partitions, unless a
    pin below the partition count wins."""
    if pin is not None and 0 <= pin < partitions:
        return pin
    return (murmur2(key.encode("utf-8")) & 0x7FFFFFFF) % partitions


def key_id(public):
    return hashlib.sha256(public).hexdigest()[:32]


def time_form(t):
    """RFC 3339, UTC, whole seconds (cut), with a Z."""
    if isinstance(t, str):
        t = datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def structured_data(value):
    """The bytes of a structured-mode event that hold its data: from just
    after the ':' that follows "data" to the value's last byte; a
    data_base64 member's decoded bytes; None when there is neither."""
    text = value.decode("utf-8")
    ws = re.compile(r"[ \t\n\r]*")
    dec = json.JSONDecoder()
    i = ws.match(text, 0).end()
    if text[i] != "{":
        raise Refused("structured event is not a JSON object")
    i = ws.match(text, i + 1).end()
    while text[i] != "}":
        name, i = json.decoder.scanstring(text, i + 1)
        i = ws.match(text, i).end()
        start = i + 1
        member, end = dec.raw_decode(text, ws.match(text, start).end())
        if name == "data":
            return text[start:end].encode("utf-8")
        if name == "data_base64":
            return b64(member)
        i = ws.match(text, end).end()
        if text[i] == ",":
            i = ws.match(text, i + 1).end()
    return None


# --- Keys --------------------------------------------------------------------


class Key:
    def __init__(self, kid, owner, role, purpose, algorithm, public, since=None, anchor=False, intro=None):
        self.id, self.owner, self.role, self.purpose = kid, owner, role, purpose
        self.algorithm, self.public, self.since, self.until = algorithm, public, since, None
        self.anchor = anchor
        # intro is the (offset, log time) of the trust record that named
        # the key first, None for an anchor given out of band; ends are the
        # (offset, log time, until) of every record that ended it.
        self.intro, self.ends = intro, []

    def valid_at(self, t):
        return (self.since is None or t >= self.since) and (self.until is None or t < self.until)


def in_cut(mark, offset, at, margin):
    """Whether the trust record at mark (offset, log time) is in the cut an
    event appended at `at` that names trust offset `offset` is judged by."""
    if mark is None:
        return True
    m_off, m_at = mark
    return m_at <= at - margin or (m_off < offset and m_at <= at + margin)


class Keys:
    """The key set the trust topic builds: registered from a record's log
    time, ended by a rotation or revocation at its log time."""

    def __init__(self, anchors, margin=datetime.timedelta(seconds=2)):
        self.keys = {k.id: k for k in anchors}
        self.margin = margin

    def key_from(self, p, at, offset):
        public = b64(p["publicKey"])
        if len(public) != 32 or key_id(public) != p["keyId"]:
            raise Refused(f"key {p['keyId']}: id does not match its public key")
        return Key(p["keyId"], p["owner"], p["role"], p["purpose"], p["algorithm"], public, since=at, intro=(offset, at))

    def end(self, kid, until, offset, at):
        k = self.keys[kid]
        if k.until is None or until < k.until:
            k.until = until
        k.ends.append((offset, at, until))

    def apply(self, typ, data, at, offset):
        if typ == "io.argosy.trust.key.registered.v1":
            k = self.key_from(data, at, offset)
            self.keys.setdefault(k.id, k)
        elif typ == "io.argosy.trust.key.rotated.v1":
            old = self.keys.get(data["keyId"])
            if old is None:
                raise Refused(f"rotation of unknown key {data['keyId']}")
            k = self.key_from(data["next"], at, offset)
            cur = self.keys.get(k.id, k)
            if {(x.owner, x.role, x.purpose) for x in (old, k, cur)} != {(old.owner, old.role, old.purpose)}:
                raise Refused(f"rotation of {old.id} to {k.id}: another owner, role or purpose")
            # An anchor's successor is one, whether the rotation names it
            # first or it was registered before.
            cur.anchor = cur.anchor or old.anchor
            self.keys.setdefault(k.id, cur)
            self.end(data["keyId"], at + datetime.timedelta(seconds=data.get("overlapSeconds", 0)), offset, at)
        elif typ == "io.argosy.trust.key.revoked.v1":
            if data["keyId"] not in self.keys:
                raise Refused(f"revocation of unknown key {data['keyId']}")
            self.end(data["keyId"], at, offset, at)

    def key(self, kid, at, trust_offset):
        """The key as an event appended at `at` sees it: every trust record
        when it names no trust offset, else only the records in its cut."""
        k = self.keys.get(kid)
        if k is None or trust_offset is None:
            return k
        if not in_cut(k.intro, trust_offset, at, self.margin):
            return None
        view = Key(k.id, k.owner, k.role, k.purpose, k.algorithm, k.public, since=k.since, anchor=k.anchor, intro=k.intro)
        for off, m_at, until in k.ends:
            if in_cut((off, m_at), trust_offset, at, self.margin) and (view.until is None or until < view.until):
                view.until = until
        return view


# --- One record -----------------------------------------------------------------


class Reader:
    def __init__(self, design, schema_dir, keys):
        self.catalogue = catalogue(design)
        self.schemas = {}
        for t in self.catalogue:
            s = json.loads((Path(schema_dir) / f"{t}.json").read_text())
            self.schemas[t] = (s["$id"], jsonschema.validators.validator_for(s)(s))
        self.keys = keys

    def event(self, headers, key, value):
        """The CloudEvent of a record, as the SDK reads it, and the bytes its
        data is hashed as."""
        msg = cekafka.KafkaMessage(headers=headers, key=key, value=value or b"")
        ev = cekafka.from_kafka_event(msg)
        ct = headers.get("content-type", b"").decode()
        if ct.startswith("application/cloudevents+json"):
            data = structured_data(value)
        elif any(h.startswith("ce_") for h in headers):
            data = value
        else:
            raise Refused("not a CloudEvent")
        return ev, data or b""

    def digest(self, attrs, data, signed, partitionkey):
        parts = []
        for name in CORE:
            v = attrs.get(name)
            if name == "time" and v is not None:
                v = time_form(v)
            parts.append(sha256(b"" if v is None else str(v).encode("utf-8")))
        parts.append(sha256(data))
        for name in signed:
            v = partitionkey if name == "partitionkey" else attrs.get(name)
            if v is None:
                raise Refused(f"signed extension {name} is not set")
            parts += [sha256(name.encode("utf-8")), sha256(str(v).encode("utf-8"))]
        return sha256(b"".join(parts))

    def signed_ext(self, attrs):
        v = attrs.get("signedextattrs") or ""
        names = v.split(",") if v else []
        for i, n in enumerate(names):
            if n in ("", "dssematerial", "sig", "signedextattrs") or n in CORE or n in names[:i]:
                raise Refused(f"signedextattrs {v!r}: {n!r} may not be listed")
        return names

    @staticmethod
    def signatures(attrs):
        """The signatures of the event, [(keyid, sig bytes)], and the digest
        a DSSE envelope carries (None in the compact form)."""
        compact, raw = attrs.get("sig"), attrs.get("dssematerial")
        if compact and raw:
            raise Refused("both sig and dssematerial")
        if compact:
            b = b64(compact)
            if not b or b[0] != SIG_VERSION:
                raise Refused(f"sig version {b[0] if b else None} is unknown")
            rest = b[1:]
            if len(rest) % SIG_ENTRY:
                raise Refused(f"sig: {len(rest)} bytes after the version, not whole entries")
            sigs = [(rest[i:i + 16].hex(), rest[i + 16:i + SIG_ENTRY]) for i in range(0, len(rest), SIG_ENTRY)]
            return sigs, None
        if not raw:
            raise Refused("unsigned: neither sig nor dssematerial")
        env = json.loads(b64(raw))
        if env.get("payloadType") != PAYLOAD_TYPE:
            raise Refused(f"payload type {env.get('payloadType')!r}")
        sigs = [(s.get("keyid"), b64(s.get("sig") or "")) for s in env.get("signatures") or []]
        payload = b64(env.get("payload") or "") if sigs else None
        return sigs, payload

    def verify(self, attrs, data, partitionkey, at, may_sign, by_cut=True):
        """The key that verifies the event, by the documented steps: by
        the cut it names, if it names one and by_cut (not a trust event)."""
        sigs, payload = self.signatures(attrs)
        if not sigs:
            raise Refused("no signatures")
        ids = [kid for kid, _ in sigs]
        if len(set(ids)) != len(ids):
            raise Refused("two signatures from one key")
        signed = self.signed_ext(attrs)
        digest = self.digest(attrs, data, signed, partitionkey)
        if payload is not None and payload != digest:
            raise Refused("the event does not match its signed digest")
        payload = digest
        ptype = PAYLOAD_TYPE.encode("utf-8")
        pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
        trust_offset = None
        if "trustoffset" in signed:
            raw = attrs.get("trustoffset") or ""
            if not re.fullmatch(r"[0-9]+", raw) or int(raw) >= 2**63:
                raise Refused(f"trustoffset {raw!r} is not a trust topic offset")
            trust_offset = int(raw)
        if not by_cut:
            # A trust event is judged by every trust record before it,
            # whatever offset it names: its reader has read no further.
            trust_offset = None
        why = []
        for kid, sig in sigs:
            k = self.keys.key(kid, at, trust_offset)
            if k is None or k.purpose != "signing" or k.algorithm != "ed25519":
                why.append(f"unknown key {kid}")
                continue
            try:
                VerifyKey(k.public).verify(pae, sig)
            except BadSignatureError:
                why.append(f"signature of {k.id} does not verify")
                continue
            if not k.valid_at(at):
                why.append(f"key {k.id} not valid at {at}")
                continue
            reason = may_sign(k)
            if reason:
                why.append(reason)
                continue
            self.check_successor(attrs.get("type"), data, sigs, pae)
            return k
        raise Refused("no signature taken: " + "; ".join(why))

    @staticmethod
    def check_successor(typ, data, sigs, pae):
        """A rotation of a hub key must be signed by the successor key too."""
        if typ != "io.argosy.trust.key.rotated.v1":
            return
        nxt = json.loads(data).get("next") or {}
        if nxt.get("role") != "hub":
            return
        public = b64(nxt["publicKey"])
        for kid, sig in sigs:
            if kid != key_id(public):
                continue
            try:
                VerifyKey(public).verify(pae, sig)
                return
            except BadSignatureError:
                pass
        raise Refused(f"rotation of hub key {nxt.get('keyId')} is not signed by the successor")

    def check(self, topic_role, headers, key, value, at, legacy_copy=False):
        """Checks one record read from a topic of role topic_role; returns
        its type, attributes and parsed data. A legacy desired-state copy
        is the one record whose partitionkey is not its key."""
        ev, data = self.event(headers, key, value)
        attrs = ev.get_attributes()
        # The SDK sets partitionkey from the record key. The signed value is
        # the ce_partitionkey header in binary mode (the key only without
        # one), and the event's own member in structured mode.
        if "ce_specversion" in headers:
            partitionkey = headers["ce_partitionkey"].decode() if "ce_partitionkey" in headers else key
        else:
            partitionkey = json.loads(value).get("partitionkey")
        if (partitionkey != key) != legacy_copy:
            raise Refused(f"partitionkey {partitionkey!r}, record key {key!r}")
        typ = attrs.get("type")
        if typ not in self.catalogue:
            raise Refused(f"type {typ!r} is not in the catalogue")
        topic, signer = self.catalogue[typ]
        if topic_role not in (topic, "deadletter") and not (topic_role == "desired" and topic == "config"):
            raise Refused(f"{typ} belongs on {topic}, read from {topic_role}")
        if attrs.get("specversion") != "1.0" or attrs.get("datacontenttype") != "application/json":
            raise Refused("not a CloudEvents 1.0 event with JSON data")
        sid, validator = self.schemas[typ]
        # Without a dataschema, the type names the schema.
        if attrs.get("dataschema") not in (None, sid):
            raise Refused(f"dataschema {attrs.get('dataschema')!r}, want {sid!r}")
        payload = json.loads(data)
        errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.path))
        if errors:
            raise Refused(f"data fails its schema: {errors[0].message}")
        subject = attrs.get("subject") or ""
        cluster = None
        m = re.fullmatch(r"clusters/([^/]+)(/[^/]+/[^/]*/[^/]+)?", subject)
        if m:
            cluster = m.group(1)
        elif topic in ("config", "queries") or signer == "cluster":
            raise Refused(f"subject {subject!r} names no cluster")
        if typ == BATCH_TYPE:
            named = [payload["cluster"]] + [d["cluster"] for d in payload["deltas"]]
            if any(c != cluster for c in named):
                raise Refused(f"a batch of {cluster!r} names cluster(s) {sorted(set(named) - {cluster})!r}")
        if topic == "trust" and signer == "hub" and subject != "keys/" + payload.get("keyId", ""):
            raise Refused(f"subject {subject!r}, want keys/<keyId of the data>")
        signed_at = datetime.datetime.fromisoformat(time_form(attrs["time"]).replace("Z", "+00:00"))
        max_age = TRUST_MAX_AGE if topic == "trust" else MAX_AGE
        if at - signed_at > max_age or signed_at - at > MAX_SKEW:
            raise Refused(f"signed {signed_at}, appended {at}: stale")

        def may_sign(k):
            if k.role != signer:
                return f"{k.role} key {k.id} may not sign {typ}"
            if topic == "trust" and not k.anchor:
                return f"key {k.id} is not a trust anchor"
            if signer == "cluster" and k.owner != cluster:
                return f"key of {k.owner} may not sign for {cluster}"
            return None

        self.verify(attrs, data, partitionkey, at, may_sign, by_cut=topic != "trust")
        return typ, attrs, payload


# --- Kafka -----------------------------------------------------------------------


def read_topic(bootstrap, topic, deadline):
    """Every record of topic, partition by partition, as
    (partition, offset, key, headers, value, log time) in offset order, and
    the partition count. It reads committed records only, to each
    partition's last stable offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "argosy-pyreader",
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    try:
        md = c.list_topics(topic, timeout=30)
        parts = sorted(md.topics[topic].partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out, done = [], {p for p in parts if ends[p] == 0}
        while len(done) < len(parts):
            if time.monotonic() > deadline:
                raise SystemExit(f"{topic}: did not reach the end of partitions {set(parts) - done}")
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pos = c.position([TopicPartition(topic, msg.partition())])[0].offset
                    if pos >= ends[msg.partition()]:
                        done.add(msg.partition())
                    continue
                raise SystemExit(f"{topic}: {msg.error()}")
            ts_type, ts = msg.timestamp()
            out.append((msg.partition(), msg.offset(), msg.key(), msg.headers() or [], msg.value(),
                        ts_type, datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc)))
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return out, len(parts)
    finally:
        c.close()


def header_map(headers):
    out = {}
    for k, v in headers:
        if k in out:
            raise Refused(f"header {k} twice")
        out[k] = v if v is not None else b""
    return out


def read_live(args, failures, summary):
    design = Path(args.design).read_text()
    topics = json.loads(args.topics)
    anchor_pub = b64(args.anchor)
    keys = Keys([Key(key_id(anchor_pub), args.anchor_owner, "hub", "signing", "ed25519", anchor_pub, anchor=True)])
    reader = Reader(design, args.schemas, keys)
    deadline = time.monotonic() + args.timeout
    expected = json.loads(args.expect_refused)
    unapplied = json.loads(args.expect_unapplied)
    # The trust topic first: it decides which keys are valid when.
    order = ["trust", "config", "desired", "placements", "status", "deployments", "queries", "answers", "audit", "deadletter"]
    if sorted(order) != sorted(topics):
        raise SystemExit(f"topics {sorted(topics)}, want {sorted(order)}")
    records = {role: read_topic(args.bootstrap, topics[role], deadline) for role in order}
    # Pins come from the config topic's cluster registrations.
    pins = {}
    for _, _, _, headers, value, _, _ in records["config"][0]:
        h = dict(headers)
        if h.get("ce_type") == b"io.argosy.config.cluster.registered.v1":
            data = json.loads(value)
            pins[data["cluster"]] = data.get("partition")
    config_ids = {}
    for role in order:
        recs, n = records[role]
        counts = summary.setdefault("counts", {}).setdefault(role, {})
        for part, off, key, headers, value, ts_type, at in recs:
            where = f"{topics[role]}/{part}@{off}"
            try:
                h = header_map(headers)
                if ts_type != TIMESTAMP_LOG_APPEND_TIME:
                    raise Refused("timestamp is not LogAppendTime")
                if key is None:
                    raise Refused("no key")
                key = key.decode("utf-8")
                check_partition(role, key, part, n, pins)
                typ, attrs, payload = reader.check(role, h, key, value, at)
                if role == "trust":
                    keys.apply(typ, payload, at, off)
                if role == "config":
                    config_ids[(part, off)] = attrs["id"]
                if role == "desired":
                    check_desired(h, key, part, attrs, config_ids)
                if role == "deadletter":
                    check_dead_letter(h, key, value, records, topics)
                counts[typ] = counts.get(typ, 0) + 1
            except Refused as e:
                # A record the workload signed with a key that was never
                # valid for it then must be refused for that reason alone;
                # a batch naming another cluster, for that one.
                if where in expected and str(e).startswith(("no signature taken", "a batch of")):
                    summary.setdefault("refused", []).append(where)
                elif where in unapplied and role == "trust" and not str(e).startswith("no signature taken"):
                    summary.setdefault("unapplied", []).append(where)
                else:
                    failures.append(f"{where}: Refused: {e}")
            except Exception as e:  # every failure is reported with its record
                failures.append(f"{where}: {type(e).__name__}: {e}")
    for where in expected:
        if where not in summary.get("refused", []):
            failures.append(f"{where}: accepted, and it is signed by a key that was not valid for it, or speaks for another cluster")
    for where in unapplied:
        if where not in summary.get("unapplied", []):
            failures.append(f"{where}: applied, and it is a trust event no reader may apply")
    summary["pins"] = pins


def check_partition(role, key, part, n, pins):
    cluster = key.split("/", 1)[0] if role == "desired" else key
    pin = pins.get(cluster) if role in ("config", "desired", "queries") else None
    want = partition_of(cluster, n, pin)
    if part != want:
        raise Refused(f"key {key!r} on partition {part}, the partitioner says {want} of {n}")


def check_desired(h, key, part, attrs, config_ids):
    m = re.fullmatch(r"clusters/(.+)", attrs["subject"])
    if not m or key != m.group(1):
        raise Refused(f"desired key {key!r} is not the subject's object {attrs['subject']!r}")
    off = int(h["argosy-config-offset"])
    if config_ids.get((part, off)) != attrs["id"]:
        raise Refused(f"argosy-config-offset {off}: the config record there is not event {attrs['id']}")


def check_dead_letter(h, key, value, records, topics):
    for name in DLQ_HEADERS:
        if name not in h:
            raise Refused(f"dead letter without {name}")
    role = {v: k for k, v in topics.items()}.get(h["argosy_dlq_topic"].decode())
    part, off = int(h["argosy_dlq_partition"]), int(h["argosy_dlq_offset"])
    orig = [r for r in records.get(role, ([], 0))[0] if r[0] == part and r[1] == off]
    if not orig or orig[0][2].decode() != key or orig[0][4] != value:
        raise Refused(f"dead letter does not copy {h['argosy_dlq_topic'].decode()}/{part}@{off}")


def read_golden(args, failures, summary):
    """The committed samples, against the keys beside them."""
    design = Path(args.design).read_text()
    golden = Path(args.golden)
    kf = json.loads((golden / "keys.json").read_text())
    keys = Keys([Key(k["id"], k["owner"], k["role"], "signing", "ed25519", b64(k["publicKey"]), anchor=k["role"] == "hub")
                 for k in kf["keys"]])
    reader = Reader(design, args.schemas, keys)
    roles = {"argosy." + r: r for r in ["config", "desired", "placements", "status", "deployments", "queries", "answers", "audit", "trust"]}
    count = 0
    for path in sorted(golden.glob("**/*io.argosy.*.json")):
        s = json.loads(path.read_text())
        try:
            h = header_map([(x["key"], x["value"].encode()) for x in s["headers"]])
            at = datetime.datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00"))
            # Desired-state copies from before copies were signed on their
            # own: the document says their header, not their key, was signed.
            legacy = path.name.startswith("legacy-")
            reader.check(roles[s["topic"]], h, s["key"], s["value"].encode(), at, legacy_copy=legacy)
            count += 1
        except Exception as e:
            failures.append(f"golden {path.relative_to(golden)}: {type(e).__name__}: {e}")
    summary["golden"] = count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topics", required=True, help="JSON object: topic role -> topic name")
    ap.add_argument("--anchor", required=True, help="the hub's public signing key, standard base64")
    ap.add_argument("--anchor-owner", required=True)
    ap.add_argument("--design", required=True, help="docs/design.md")
    ap.add_argument("--schemas", required=True, help="schemas/json")
    ap.add_argument("--golden", help="events/testdata/golden")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--expect-refused", default="[]",
                    help="JSON list of records, topic/partition@offset, that must be refused for their signing key")
    ap.add_argument("--expect-unapplied", default="[]",
                    help="JSON list of trust records, topic/partition@offset, well signed, that must not be applied")
    args = ap.parse_args()
    failures, summary = [], {}
    read_live(args, failures, summary)
    if args.golden:
        read_golden(args, failures, summary)
    for f in failures:
        print("FAIL", f)
    print(json.dumps(summary, sort_keys=True))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
