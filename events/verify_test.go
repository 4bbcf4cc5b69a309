package events_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
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
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := events.NewSigner(priv)
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

func sign(t testing.TB, s *events.Signer, e *event.Event) *event.Event {
	t.Helper()
	if err := s.Sign(context.Background(), e); err != nil {
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
	tests := []struct {
		name   string
		target string
		rec    func() *kgo.Record
		want   error
	}{
		{"not a cloudevent", "", func() *kgo.Record { return &kgo.Record{Value: []byte(`{"hello":"world"}`)} }, events.ErrMalformed},
		{"missing id", "", func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			return header(r, "ce_id", "")
		}, events.ErrMalformed},
		{"unknown type", "", func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_type", "io.argosy.config.nope.v1")
		}, events.ErrUnknownType},
		{"oversized", "", func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Value = []byte(`{"pad":"` + strings.Repeat("x", events.MaxEventBytes) + `"}`)
			return r
		}, events.ErrOversized},
		{"wrong dataschema", "", func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_dataschema", schemas.URL(events.TypeHeartbeat))
		}, events.ErrSchema},
		{"unsigned", "", func() *kgo.Record { return record(t, appUpsert(t, "cluster-a")) }, events.ErrUnsigned},
		{"data changed after signing", "", func() *kgo.Record {
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Value = []byte(strings.Replace(string(r.Value), `"generation":1`, `"generation":2`, 1))
			return r
		}, events.ErrBadSignature},
		{"subject changed after signing", "", func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_subject", "clusters/cluster-b/applications/argocd/guestbook")
		}, events.ErrBadSignature},
		{"signature forged", "", func() *kgo.Record {
			e := envelope(t, sign(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) {
				env.Signatures[0].Sig = base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
			})
			return record(t, e)
		}, events.ErrBadSignature},
		{"dssematerial not base64", "", func() *kgo.Record {
			return header(record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))), "ce_dssematerial", "%%%")
		}, events.ErrBadSignature},
		{"unknown key", "", func() *kgo.Record { return record(t, sign(t, f.stranger, appUpsert(t, "cluster-a"))) }, events.ErrUnknownKey},
		{"zero signatures", "", func() *kgo.Record {
			return record(t, envelope(t, sign(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) { env.Signatures = nil }))
		}, events.ErrNoSignatures},
		{"two signatures from one key", "", func() *kgo.Record {
			return record(t, envelope(t, sign(t, f.hub, appUpsert(t, "cluster-a")), func(env *dsse.Envelope) {
				env.Signatures = append(env.Signatures, env.Signatures[0])
			}))
		}, events.ErrDuplicateSignature},
		{"cluster key signs config", "", func() *kgo.Record { return record(t, sign(t, f.clusterA, appUpsert(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"cluster signs for another cluster", "", func() *kgo.Record { return record(t, sign(t, f.clusterB, heartbeat(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"hub signs status", "", func() *kgo.Record { return record(t, sign(t, f.hub, heartbeat(t, "cluster-a"))) }, events.ErrNotAuthorized},
		{"config for another cluster", "cluster-b", func() *kgo.Record {
			// Re-keyed onto cluster-b's partition: the key is not signed,
			// the subject is.
			r := record(t, sign(t, f.hub, appUpsert(t, "cluster-a")))
			r.Key = []byte("cluster-b")
			return r
		}, events.ErrWrongTarget},
		{"schema violation", "", func() *kgo.Record {
			e := appUpsert(t, "cluster-a")
			if err := e.SetData(event.ApplicationJSON, map[string]any{"cluster": "cluster-a", "name": "x", "generation": -1}); err != nil {
				t.Fatal(err)
			}
			return record(t, sign(t, f.hub, e))
		}, events.ErrSchema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []events.DecoderOption
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
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.WithTarget("cluster-a"))
	if err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]*kgo.Record{
		"config for me":        record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))),
		"status of cluster b":  record(t, sign(t, f.clusterB, heartbeat(t, "cluster-b"))),
		"unsigned extra field": record(t, sign(t, f.hub, appUpsert(t, "cluster-a"))),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "unsigned extra field" {
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "ce_injected", Value: []byte("x")})
			}
			d, err := dec.Decode(context.Background(), rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := d.Event.Extensions()["injected"]; ok {
				t.Error("an unsigned extension survived verification")
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
	dec, err := events.NewDecoder(events.NewVerifier(f.reg))
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
