package events_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// fixture is a hub key, two cluster keys and a registry that knows them.
type fixture struct {
	hub, clusterA, clusterB, stranger *events.Signer
	reg                               *events.Registry
}

func newSigner(t testing.TB) *events.Signer {
	t.Helper()
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{hub: newSigner(t), clusterA: newSigner(t), clusterB: newSigner(t), stranger: newSigner(t)}
	key := func(s *events.Signer, owner, role string) events.Key {
		return events.Key{ID: s.KeyID(), Owner: owner, Role: role, Purpose: schemas.PurposeSigning, Algorithm: "ed25519", Public: s.Public()}
	}
	f.reg = events.NewRegistry(key(f.hub, "hub", schemas.RoleHub),
		key(f.clusterA, "cluster-a", schemas.RoleCluster), key(f.clusterB, "cluster-b", schemas.RoleCluster))
	return f
}

func appUpsert(t testing.TB, cluster string) *event.Event {
	t.Helper()
	subj := events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "guestbook"}
	e, err := events.New("//argosy.dev/hub/test", events.TypeApplicationUpserted, subj.String(), cluster,
		schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "guestbook", Generation: 1},
			Project: "default", Spec: json.RawMessage(`{"project":"default"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func heartbeat(t testing.TB, cluster string) *event.Event {
	t.Helper()
	e, err := events.New("//argosy.dev/spoke/"+cluster, events.TypeHeartbeat, events.Subject{Cluster: cluster}.String(), cluster,
		schemas.Heartbeat{Cluster: cluster, AgentVersion: "test", Mode: "managed", ConfigOffset: 1, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// appStatus is a status delta as a spoke writes it: sync and health of one
// Application.
func appStatus(t testing.TB, cluster string) *event.Event {
	t.Helper()
	subj := events.Subject{Cluster: cluster, Kind: "applications", Namespace: "argocd", Name: "guestbook"}
	e, err := events.New("//argosy.dev/spoke/"+cluster, events.TypeApplicationStatus, subj.String(), cluster,
		schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: cluster, Namespace: "argocd", Name: "guestbook", Generation: 1},
			Seq: 7, Sync: &schemas.SyncStatus{Status: "Synced", Revision: "4f1c2d9"}, Health: &schemas.HealthStatus{Status: "Healthy"}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// appStatusBatch is a batch of status deltas from cluster, one an
// Application for each of deltaClusters, the cluster each delta names.
func appStatusBatch(t testing.TB, cluster string, deltaClusters ...string) *event.Event {
	t.Helper()
	b := schemas.ApplicationStatusBatch{Cluster: cluster}
	for i, c := range deltaClusters {
		b.Deltas = append(b.Deltas, schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: c, Namespace: "argocd",
			Name: fmt.Sprintf("app-%d", i), Generation: 1}, Seq: 2, Health: &schemas.HealthStatus{Status: "Healthy"}})
	}
	e, err := events.New("//argosy.dev/spoke/"+cluster, events.TypeApplicationStatusBatch, events.Subject{Cluster: cluster}.String(), cluster, b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func sign(t testing.TB, s *events.Signer, e *event.Event) *event.Event {
	t.Helper()
	if err := s.Sign(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// signDSSE signs e in the DSSE form, which Sign wrote before the compact
// one and readers accept forever.
func signDSSE(t testing.TB, s *events.Signer, e *event.Event) *event.Event {
	t.Helper()
	if err := s.SignAs(context.Background(), e, events.SigDSSE); err != nil {
		t.Fatal(err)
	}
	return e
}

// signAs signs e in form.
func signAs(t testing.TB, form events.SigForm, s *events.Signer, e *event.Event) *event.Event {
	t.Helper()
	if err := s.SignAs(context.Background(), e, form); err != nil {
		t.Fatal(err)
	}
	return e
}

func record(t testing.TB, e *event.Event) *kgo.Record {
	t.Helper()
	r, err := events.EventRecord(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	r.Timestamp = time.Now()
	return r
}

// envelope rewrites e's DSSE envelope with f.
func envelope(t testing.TB, e *event.Event, f func(*dsse.Envelope)) *event.Event {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(e.Extensions()[events.ExtDSSEMaterial].(string))
	if err != nil {
		t.Fatal(err)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	f(&env)
	raw, err = json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	e.SetExtension(events.ExtDSSEMaterial, base64.StdEncoding.EncodeToString(raw))
	return e
}

func TestDecodeRejects(t *testing.T) {
	f := newFixture(t)
	header := func(r *kgo.Record, key, value string) *kgo.Record {
		for i, h := range r.Headers {
			if h.Key == key {
				r.Headers[i].Value = []byte(value)
				return r
			}
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
		return r
	}
	// A hub key registered through the log, not an anchor.
	logged := newSigner(t)
	sp, _ := events.Lookup(events.TypeKeyRegistered)
	if err := f.reg.Apply(&events.Decoded{Spec: sp, LogTime: time.Now().Add(-time.Hour), Data: &schemas.KeyRegistered{
		KeyID: logged.KeyID(), Owner: "hub-2", Role: schemas.RoleHub, Purpose: schemas.PurposeSigning, Algorithm: "ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(logged.Public())}}); err != nil {
		t.Fatal(err)
	}
	topics := events.DefaultTopics("")
	tests := []struct {
		name   string
		target string
		opts   []events.Option
		rec    func() *kgo.Record
		want   error
	}{
		{"producer-chosen timestamp", "", []events.Option{}, func() *kgo.Record {
			return record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
		}, events.ErrTimestamp},
		{"status on the config topic", "", []events.Option{events.AcceptCreateTime(), events.WithTopics(topics)}, func() *kgo.Record {
			r := record(t, sign(t, f.clusterA, heartbeat(t, "cluster-a")))
			r.Topic = topics[events.TopicConfig]
			return r
		}, events.ErrWrongTopic},
		{"appended a year after signing", "", nil, func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Timestamp = time.Now().Add(365 * 24 * time.Hour)
			return r
		}, events.ErrStale},
		{"signed an hour in the future", "", nil, func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Timestamp = time.Now().Add(-time.Hour)
			return r
		}, events.ErrStale},
		{"a key event appended long after its signing", "", nil, func() *kgo.Record {
			// A copy of a key event from a transaction that was aborted.
			e, err := events.New("//argosy.dev/hub", events.TypeKeyRevoked, "keys/"+f.hub.KeyID(), "hub", schemas.KeyRevoked{KeyID: f.hub.KeyID(), Reason: "old"})
			if err != nil {
				t.Fatal(err)
			}
			r := record(t, sign(t, f.hub, e))
			r.Timestamp = r.Timestamp.Add(events.TrustMaxAge + time.Minute)
			return r
		}, events.ErrStale},
		{"a batch with a delta of another cluster", "", []events.Option{events.AcceptCreateTime()}, func() *kgo.Record {
			// cluster-a may sign for cluster-a alone, in every delta.
			return record(t, sign(t, f.clusterA, appStatusBatch(t, "cluster-a", "cluster-a", "cluster-b")))
		}, events.ErrMalformed},
		{"a batch signed by another cluster", "", []events.Option{events.AcceptCreateTime()}, func() *kgo.Record {
			return record(t, sign(t, f.clusterB, appStatusBatch(t, "cluster-a", "cluster-a")))
		}, events.ErrNotAuthorized},
		{"specversion 0.3", "", nil, func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_specversion", "0.3")
		}, events.ErrMalformed},
		{"trust event signed by a logged hub key", "", nil, func() *kgo.Record {
			e, err := events.New("//argosy.dev/hub", events.TypeKeyRevoked, "keys/x", "hub", schemas.KeyRevoked{KeyID: f.hub.KeyID(), Reason: "takeover"})
			if err != nil {
				t.Fatal(err)
			}
			return record(t, sign(t, logged, e))
		}, events.ErrNotAuthorized},
		{"not a cloudevent", "", nil, func() *kgo.Record { return &kgo.Record{Value: []byte(`{"hello":"world"}`)} }, events.ErrMalformed},
		{"missing id", "", nil, func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			return header(r, "ce_id", "")
		}, events.ErrMalformed},
		{"unknown type", "", nil, func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_type", "io.argosy.config.nope.v1")
		}, events.ErrUnknownType},
		{"oversized", "", nil, func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Value = []byte(`{"pad":"` + strings.Repeat("x", events.MaxEventBytes) + `"}`)
			return r
		}, events.ErrOversized},
		{"wrong dataschema", "", nil, func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_dataschema", schemas.URL(events.TypeHeartbeat))
		}, events.ErrSchema},
		{"unsigned", "", nil, func() *kgo.Record { return record(t, appUpsert(t, "cluster-a")) }, events.ErrUnsigned},
		{"data changed after signing", "", nil, func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Value = []byte(strings.Replace(string(r.Value), `"generation":1`, `"generation":2`, 1))
			return r
		}, events.ErrBadSignature},
		{"subject changed after signing", "", nil, func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_subject", "clusters/cluster-b/applications/argocd/guestbook")
		}, events.ErrBadSignature},
		{"signature forged", "", nil, func() *kgo.Record {
			e := envelope(t, signDSSE(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) {
				env.Signatures[0].Sig = base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
			})
			return record(t, e)
		}, events.ErrBadSignature},
		{"dssematerial not base64", "", nil, func() *kgo.Record {
			return header(record(t, signDSSE(t, f.hub, appUpsert(t, "cluster-a"))), "ce_dssematerial", "%%%")
		}, events.ErrBadSignature},
		{"unknown key", "", nil, func() *kgo.Record { return record(t, sign(t, f.stranger, appUpsert(t, "cluster-a"))) }, events.ErrUnknownKey},
		{"zero signatures", "", nil, func() *kgo.Record {
			return record(t, envelope(t, signDSSE(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) { env.Signatures = nil }))
		}, events.ErrNoSignatures},
		{"two signatures from one key", "", nil, func() *kgo.Record {
			return record(t, envelope(t, signDSSE(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) {
				env.Signatures = append(env.Signatures, env.Signatures[0])
			}))
		}, events.ErrDuplicateSignature},
		{"cluster key signs config", "", nil, func() *kgo.Record { return record(t, sign(t, f.clusterA, appUpsert(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"cluster signs for another cluster", "", nil, func() *kgo.Record { return record(t, sign(t, f.clusterB, heartbeat(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"hub signs status", "", nil, func() *kgo.Record { return record(t, sign(t, f.hub, heartbeat(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"config for another cluster", "cluster-b", nil, func() *kgo.Record {
			// Re-keyed onto cluster-b's partition: the key is not signed,
			// the subject is.
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Key = []byte("cluster-b")
			return r
		}, events.ErrWrongTarget},
		{"schema violation", "", nil, func() *kgo.Record {
			e := appUpsert(t, "cluster-a")
			if err := e.SetData(event.ApplicationJSON, map[string]any{"cluster": "cluster-a", "name": "x", "generation": -1}); err != nil {
				t.Fatal(err)
			}
			return record(t, sign(t, f.hub, e))
		}, events.ErrSchema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts == nil {
				opts = []events.Option{events.AcceptCreateTime()}
			}
			if tc.target != "" {
				opts = append(opts, events.WithTarget(tc.target))
			}
			dec, err := events.NewDecoder(events.NewVerifier(f.reg), opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = dec.Decode(context.Background(), tc.rec())
			var de *events.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got := events.Reason(err); got != tc.want.Error() {
				t.Errorf("Reason = %q, want %q", got, tc.want.Error())
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		target string
		rec    func() *kgo.Record
	}{
		{"config for me", "cluster-a", func() *kgo.Record { return record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))) }},
		{"the hub reads cluster b's status", "", func() *kgo.Record { return record(t, sign(t, f.clusterB, heartbeat(t, "cluster-b"))) }},
		{"the hub reads cluster b's batch of deltas", "", func() *kgo.Record {
			return record(t, sign(t, f.clusterB, appStatusBatch(t, "cluster-b", "cluster-b", "cluster-b")))
		}},
		{"unsigned extension dropped", "cluster-a", func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "ce_injected", Value: []byte("x")})
			return r
		}},
		{"a stray signature before the hub's", "cluster-a", func() *kgo.Record {
			// cluster-b's valid signature comes first; it may not sign
			// config, and must not hide the hub's signature after it.
			e := signDSSE(t, f.hub, appUpsert(t, "cluster-a"))
			c := e.Clone()
			if err := f.clusterB.SignAs(context.Background(), &c, events.SigDSSE); err != nil {
				t.Fatal(err)
			}
			return record(t, envelope(t, e, func(env *dsse.Envelope) {
				raw, err := base64.StdEncoding.DecodeString(c.Extensions()[events.ExtDSSEMaterial].(string))
				if err != nil {
					t.Fatal(err)
				}
				var ce dsse.Envelope
				if err := json.Unmarshal(raw, &ce); err != nil {
					t.Fatal(err)
				}
				env.Signatures = append(ce.Signatures, env.Signatures...)
			}))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []events.Option{events.AcceptCreateTime()}
			if tc.target != "" {
				opts = append(opts, events.WithTarget(tc.target))
			}
			dec, err := events.NewDecoder(events.NewVerifier(f.reg), opts...)
			if err != nil {
				t.Fatal(err)
			}
			d, err := dec.Decode(context.Background(), tc.rec())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := d.Event.Extensions()["injected"]; ok {
				t.Error("an unsigned extension survived verification")
			}
			if !d.Event.Time().Equal(d.Event.Time().Truncate(time.Second)) {
				t.Error("sub-second time survived verification")
			}
		})
	}
}

// TestRegistryReplay checks that keys are judged by the log time of the event:
// a rotated or revoked key still verifies what it signed before, and nothing
// after.
func TestRegistryReplay(t *testing.T) {
	f := newFixture(t)
	next := newSigner(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	trust := func(typ string, data any, at time.Time) {
		t.Helper()
		sp, _ := events.Lookup(typ)
		d := &events.Decoded{Spec: sp, Data: data, LogTime: at}
		if err := f.reg.Apply(d); err != nil {
			t.Fatal(err)
		}
		if err := f.reg.Apply(d); err != nil { // idempotent
			t.Fatal(err)
		}
	}
	reg := func(s *events.Signer) schemas.KeyRegistered {
		return schemas.KeyRegistered{KeyID: s.KeyID(), Owner: "cluster-a", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())}
	}
	trust(events.TypeKeyRotated, &schemas.KeyRotated{KeyID: f.clusterA.KeyID(), Next: reg(next)}, t0.Add(time.Hour))
	trust(events.TypeKeyRevoked, &schemas.KeyRevoked{KeyID: next.KeyID(), Reason: "lost"}, t0.Add(2*time.Hour))
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.AcceptCreateTime(), events.WithStaleness(24*365*time.Hour, 24*365*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		signer *events.Signer
		at     time.Duration
		want   error
	}{
		{"old key before rotation", f.clusterA, 30 * time.Minute, nil},
		{"old key after rotation", f.clusterA, 90 * time.Minute, events.ErrRevokedKey},
		{"new key before it existed", next, 30 * time.Minute, events.ErrRevokedKey},
		{"new key after rotation", next, 90 * time.Minute, nil},
		{"new key after revocation", next, 3 * time.Hour, events.ErrRevokedKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := record(t, sign(t, tc.signer, heartbeat(t, "cluster-a")))
			r.Timestamp = t0.Add(tc.at)
			_, err := dec.Decode(context.Background(), r)
			if (tc.want == nil) != (err == nil) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSealOpen(t *testing.T) {
	a, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := events.Seal(a.Public, []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Ciphertext, "s3cret") {
		t.Fatal("plaintext visible")
	}
	got, err := events.Open(s, a)
	if err != nil || string(got) != "s3cret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := events.Open(s, b); !errors.Is(err, events.ErrSealed) {
		t.Fatalf("Open with another key: %v, want ErrSealed", err)
	}
	forged := s
	forged.KeyID = b.ID()
	if _, err := events.Open(forged, b); !errors.Is(err, events.ErrSealed) {
		t.Fatalf("Open of a box relabelled for another key: %v, want ErrSealed", err)
	}
}

func TestSubject(t *testing.T) {
	for _, s := range []string{"clusters/a", "clusters/a/applications/argocd/guestbook", "clusters/a/appprojects//default"} {
		p, err := events.ParseSubject(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if p.String() != s {
			t.Errorf("round trip %q -> %q", s, p.String())
		}
	}
	for _, s := range []string{"", "clusters/", "cluster/a", "clusters/a/b", "clusters/a/applications/ns/", "keys/abc"} {
		if _, err := events.ParseSubject(s); err == nil {
			t.Errorf("ParseSubject(%q) accepted", s)
		}
	}
}

func TestRegistryRefusesBadTrustEvents(t *testing.T) {
	f := newFixture(t)
	next := newSigner(t)
	reg := func(s *events.Signer, owner, role string) schemas.KeyRegistered {
		return schemas.KeyRegistered{KeyID: s.KeyID(), Owner: owner, Role: role, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())}
	}
	badID := reg(next, "cluster-a", schemas.RoleCluster)
	badID.KeyID = f.hub.KeyID()
	tests := []struct {
		name string
		typ  string
		data any
	}{
		{"rotate an unknown key", events.TypeKeyRotated, &schemas.KeyRotated{KeyID: "nope", Next: reg(next, "cluster-a", schemas.RoleCluster)}},
		{"rotate a cluster key into a hub key", events.TypeKeyRotated, &schemas.KeyRotated{KeyID: f.clusterA.KeyID(), Next: reg(next, "hub", schemas.RoleHub)}},
		{"rotate to another cluster's key", events.TypeKeyRotated, &schemas.KeyRotated{KeyID: f.clusterA.KeyID(), Next: reg(next, "cluster-b", schemas.RoleCluster)}},
		{"key id that is not the key's", events.TypeKeyRegistered, &badID},
		{"revoke an unknown key", events.TypeKeyRevoked, &schemas.KeyRevoked{KeyID: "nope"}},
		{"re-register a key to another owner", events.TypeKeyRegistered, func() *schemas.KeyRegistered {
			r := reg(f.clusterA, "cluster-b", schemas.RoleCluster)
			return &r
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.reg.Keys()
			sp, _ := events.Lookup(tc.typ)
			err := f.reg.Apply(&events.Decoded{Spec: sp, Data: tc.data, LogTime: time.Now()})
			if !events.IsPoison(err) {
				t.Fatalf("Apply = %v, want a poison error", err)
			}
			if len(f.reg.Keys()) != len(before) {
				t.Error("a refused event changed the registry")
			}
			if k, _ := f.reg.Key(f.clusterA.KeyID()); !k.Until.IsZero() {
				t.Error("a refused rotation ended the old key")
			}
		})
	}
}

// TestFollowingRegistryWaits checks that a registry fed by the trust topic
// does not judge events from beyond what it has read: it answers
// ErrKeysBehind (retry), never a rejection or an acceptance that a rebuild
// could contradict.
func TestFollowingRegistryWaits(t *testing.T) {
	hub := newSigner(t)
	cl := newSigner(t)
	r := events.NewFollowingRegistry(events.HubAnchor("hub", hub.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(r), events.AcceptCreateTime())
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, sign(t, cl, heartbeat(t, "cluster-a")))
	_, err = dec.Decode(context.Background(), rec)
	if !errors.Is(err, events.ErrKeysBehind) || events.IsPoison(err) {
		t.Fatalf("behind: %v, want ErrKeysBehind and not poison", err)
	}
	r.Advance(rec.Timestamp)
	if _, err := dec.Decode(context.Background(), rec); !errors.Is(err, events.ErrUnknownKey) {
		t.Fatalf("caught up, key never registered: %v, want ErrUnknownKey", err)
	}
	sp, _ := events.Lookup(events.TypeKeyRegistered)
	if err := r.Apply(&events.Decoded{Spec: sp, LogTime: rec.Timestamp.Add(-time.Minute), Data: &schemas.KeyRegistered{
		KeyID: cl.KeyID(), Owner: "cluster-a", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning, Algorithm: "ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(cl.Public())}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Decode(context.Background(), rec); err != nil {
		t.Fatalf("registered before the event: %v", err)
	}
}

// TestWaitCovers checks that a wait for the registry to cover a log time
// ends the moment coverage reaches it, and not before; and that it ends
// with ctx.
func TestWaitCovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := events.NewFollowingRegistry()
		at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		done := make(chan error, 1)
		go func() { done <- r.WaitCovers(t.Context(), at) }()
		r.Advance(at.Add(-time.Second))
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("returned %v before coverage reached the time", err)
		default:
		}
		r.Advance(at)
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		go func() { done <- r.WaitCovers(ctx, at.Add(time.Hour)) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v", err)
		}
		if err := events.NewRegistry().WaitCovers(t.Context(), at); err != nil {
			t.Fatalf("a fixed registry covers every time: %v", err)
		}
	})
}

// TestHubKeyRotationNeedsBothKeys decodes rotations of the hub's anchor
// key as the trust topic's reader does: one signed by the old key alone is
// refused, as is one signed by the new key alone; one both keys signed is
// accepted and makes the successor an anchor, which then signs trust
// events, while the old key signs none after the rotation. In each
// signature form.
func TestHubKeyRotationNeedsBothKeys(t *testing.T) {
	for _, form := range []events.SigForm{events.SigCompact, events.SigDSSE} {
		t.Run(form.String(), func(t *testing.T) { hubKeyRotationNeedsBothKeys(t, form) })
	}
}

func hubKeyRotationNeedsBothKeys(t *testing.T, form events.SigForm) {
	old, next := newSigner(t), newSigner(t)
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", old.Public()))
	dec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.AcceptCreateTime(), events.WithStaleness(24*time.Hour, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rotation := func() *event.Event {
		e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRotated, "keys/"+old.KeyID(), "hub",
			schemas.KeyRotated{KeyID: old.KeyID(), Next: schemas.KeyRegistered{KeyID: next.KeyID(), Owner: "hub", Role: schemas.RoleHub,
				Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(next.Public())}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	clusterKey := func() *event.Event {
		s := newSigner(t)
		e, err := events.New("//argosy.dev/hub/test", events.TypeKeyRegistered, "keys/"+s.KeyID(), "cluster-a",
			schemas.KeyRegistered{KeyID: s.KeyID(), Owner: "cluster-a", Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
				Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(s.Public())})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	t0 := time.Now().Add(-time.Hour)
	take := func(e *event.Event, at time.Duration) error {
		t.Helper()
		r := record(t, e)
		r.Timestamp = t0.Add(at)
		d, err := dec.Decode(t.Context(), r)
		if err == nil {
			err = keys.Apply(d)
		}
		return err
	}
	both, err := old.Cosigner(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := take(signAs(t, form, old, rotation()), time.Minute); !errors.Is(err, events.ErrNotAuthorized) {
		t.Fatalf("rotation signed by the old key alone: %v, want ErrNotAuthorized", err)
	}
	if err := take(signAs(t, form, next, rotation()), time.Minute); !errors.Is(err, events.ErrUnknownKey) {
		t.Fatalf("rotation signed by the new key alone: %v, want ErrUnknownKey", err)
	}
	if k, _ := keys.Key(old.KeyID()); !k.Until.IsZero() {
		t.Fatal("a refused rotation ended the old key")
	}
	if err := take(signAs(t, form, old, clusterKey()), 2*time.Minute); err != nil {
		t.Fatalf("the anchor registers a cluster key before the rotation: %v", err)
	}
	if err := take(signAs(t, form, both, rotation()), 3*time.Minute); err != nil {
		t.Fatalf("rotation signed by both keys: %v", err)
	}
	if k, ok := keys.Key(next.KeyID()); !ok || !k.Anchor || !k.Since.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("successor %+v: want an anchor from the rotation on", k)
	}
	if err := take(signAs(t, form, next, clusterKey()), 4*time.Minute); err != nil {
		t.Fatalf("the successor registers a cluster key: %v", err)
	}
	if err := take(signAs(t, form, old, clusterKey()), 4*time.Minute); !errors.Is(err, events.ErrRevokedKey) {
		t.Fatalf("the retired key registers a cluster key: %v, want ErrRevokedKey", err)
	}
}

// TestCosigner checks that a cosigned event carries both signatures and
// that a reader knowing either key alone accepts it.
func TestCosigner(t *testing.T) {
	a, b := newSigner(t), newSigner(t)
	both, err := a.Cosigner(b)
	if err != nil {
		t.Fatal(err)
	}
	if both.KeyID() != a.KeyID() || !slices.Equal(both.KeyIDs(), []string{a.KeyID(), b.KeyID()}) {
		t.Fatalf("KeyID %s, KeyIDs %v", both.KeyID(), both.KeyIDs())
	}
	if _, err := both.Cosigner(b); err == nil {
		t.Error("a cosigner of a cosigner was made")
	}
	if _, err := a.Cosigner(a); err == nil {
		t.Error("a key cosigning with itself was made")
	}
	for _, s := range []*events.Signer{a, b} {
		dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", s.Public()))), events.AcceptCreateTime())
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decode(t.Context(), record(t, sign(t, both, appUpsert(t, "cluster-a"))))
		if err != nil {
			t.Fatalf("reader of %s: %v", s.KeyID(), err)
		}
		if d.Signer.ID != s.KeyID() {
			t.Errorf("verified by %s, want %s", d.Signer.ID, s.KeyID())
		}
	}
}

// TestDeriveKeys: a key's derived secret is the same for every holder of
// the key, differs by purpose and by key, and a cosigner derives one per
// key, its own first.
func TestDeriveKeys(t *testing.T) {
	a, b := newSigner(t), newSigner(t)
	derive := func(s *events.Signer, purpose string) [][]byte {
		t.Helper()
		ks, err := s.DeriveKeys(purpose)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if len(k) != 32 {
				t.Fatalf("a %d-byte secret", len(k))
			}
		}
		return ks
	}
	both, err := a.Cosigner(b)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb, sboth := derive(a, "sessions"), derive(b, "sessions"), derive(both, "sessions")
	if len(sa) != 1 || len(sboth) != 2 || !bytes.Equal(sboth[0], sa[0]) || !bytes.Equal(sboth[1], sb[0]) {
		t.Fatalf("a cosigner's secrets are not its keys' in order: %x, %x, %x", sa, sb, sboth)
	}
	if !bytes.Equal(derive(a, "sessions")[0], sa[0]) {
		t.Error("the same key and purpose derived two secrets")
	}
	if bytes.Equal(derive(a, "other")[0], sa[0]) || bytes.Equal(sa[0], sb[0]) {
		t.Error("two purposes or two keys derived the same secret")
	}
}
