package events_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// headerValue returns r's header key.
func headerValue(r *kgo.Record, key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// withSig rewrites the bytes of r's ce_sig header with f.
func withSig(t *testing.T, r *kgo.Record, f func([]byte) []byte) *kgo.Record {
	t.Helper()
	for i, h := range r.Headers {
		if h.Key != "ce_sig" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(string(h.Value))
		if err != nil {
			t.Fatal(err)
		}
		r.Headers[i].Value = []byte(base64.StdEncoding.EncodeToString(f(b)))
		return r
	}
	t.Fatal("no ce_sig header")
	return nil
}

func flip(i int) func([]byte) []byte {
	return func(b []byte) []byte { b[i] ^= 1; return b }
}

// TestCompactSigOnTheWire pins the compact form: a ce_sig header of a
// version byte and one 80-byte entry per key, no ce_dssematerial, and no
// ce_dataschema on a status delta, while a config event keeps it.
func TestCompactSigOnTheWire(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name       string
		e          *event.Event
		signer     *events.Signer
		entries    int
		dataschema bool
	}{
		{"status delta", appStatus(t, "cluster-a"), f.clusterA, 1, false},
		{"config event", appUpsert(t, "cluster-a"), f.hub, 1, true},
		{"cosigned", appUpsert(t, "cluster-a"), cosigner(t, f.hub, f.stranger), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record(t, sign(t, tc.signer, tc.e))
			v, ok := headerValue(r, "ce_sig")
			if !ok {
				t.Fatal("no ce_sig header")
			}
			b, err := base64.StdEncoding.DecodeString(string(v))
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 + tc.entries*80; len(b) != want || b[0] != events.SigVersion1 {
				t.Errorf("ce_sig holds %d bytes, version %d; want %d, version %d", len(b), b[0], want, events.SigVersion1)
			}
			if got := b[1:17]; hex.EncodeToString(got) != tc.signer.KeyID() {
				t.Errorf("first key id %x, want %s", got, tc.signer.KeyID())
			}
			if _, ok := headerValue(r, "ce_dssematerial"); ok {
				t.Error("ce_dssematerial written beside ce_sig")
			}
			if _, ok := headerValue(r, "ce_dataschema"); ok != tc.dataschema {
				t.Errorf("ce_dataschema present %v, want %v", ok, tc.dataschema)
			}
		})
	}
}

func cosigner(t testing.TB, a, b *events.Signer) *events.Signer {
	t.Helper()
	c, err := a.Cosigner(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompactSigRefusesTampering changes one thing of a compact signature
// at a time: each is refused with a *DecodeError of a telling kind and
// message, never a panic.
func TestCompactSigRefusesTampering(t *testing.T) {
	f := newFixture(t)
	signed := func() *kgo.Record { return record(t, sign(t, f.clusterA, appStatus(t, "cluster-a"))) }
	tests := []struct {
		name string
		rec  func() *kgo.Record
		want error
		msg  string
	}{
		{"a bit of the signature flipped", func() *kgo.Record { return withSig(t, signed(), flip(17+10)) },
			events.ErrBadSignature, "does not verify"},
		{"a bit of the key id flipped", func() *kgo.Record { return withSig(t, signed(), flip(1+3)) },
			events.ErrUnknownKey, "key"},
		{"the version byte flipped", func() *kgo.Record { return withSig(t, signed(), flip(0)) },
			events.ErrBadSignature, "sig version 0 is unknown"},
		{"an unknown version", func() *kgo.Record {
			return withSig(t, signed(), func(b []byte) []byte { b[0] = 2; return b })
		}, events.ErrBadSignature, "sig version 2 is unknown"},
		{"truncated", func() *kgo.Record {
			return withSig(t, signed(), func(b []byte) []byte { return b[:len(b)-1] })
		}, events.ErrBadSignature, "not whole 80-byte entries"},
		{"a key id without a signature", func() *kgo.Record {
			return withSig(t, signed(), func(b []byte) []byte { return b[:17] })
		}, events.ErrBadSignature, "not whole 80-byte entries"},
		{"the version alone", func() *kgo.Record {
			return withSig(t, signed(), func(b []byte) []byte { return b[:1] })
		}, events.ErrNoSignatures, ""},
		{"two signatures from one key", func() *kgo.Record {
			return withSig(t, signed(), func(b []byte) []byte { return append(b, b[1:]...) })
		}, events.ErrDuplicateSignature, "signed twice"},
		{"not base64", func() *kgo.Record {
			r := signed()
			for i, h := range r.Headers {
				if h.Key == "ce_sig" {
					r.Headers[i].Value = []byte("%%%")
				}
			}
			return r
		}, events.ErrBadSignature, "sig is not base64"},
		{"both forms", func() *kgo.Record {
			r := signed()
			old := record(t, signDSSE(t, f.clusterA, appStatus(t, "cluster-a")))
			v, _ := headerValue(old, "ce_dssematerial")
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "ce_dssematerial", Value: v})
			return r
		}, events.ErrBadSignature, "both sig and dssematerial"},
		{"the signature of another event", func() *kgo.Record {
			r := signed()
			other := record(t, sign(t, f.clusterA, appStatus(t, "cluster-a")))
			v, _ := headerValue(other, "ce_sig")
			for i, h := range r.Headers {
				if h.Key == "ce_sig" {
					r.Headers[i].Value = v
				}
			}
			return r
		}, events.ErrBadSignature, "does not verify"},
		{"a dataschema added after signing", func() *kgo.Record {
			r := signed()
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "ce_dataschema", Value: []byte(schemas.URL(events.TypeApplicationStatus))})
			return r
		}, events.ErrBadSignature, "does not verify"},
	}
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.AcceptCreateTime())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dec.Decode(context.Background(), tc.rec())
			var de *events.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want a *DecodeError of %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q, want it to say %q", err, tc.msg)
			}
		})
	}
}

// TestSigForms decodes each form, and the compact one with a cosigner's
// two signatures, the stranger's first.
func TestSigForms(t *testing.T) {
	f := newFixture(t)
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.AcceptCreateTime())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rec    *kgo.Record
		want   string
		signer *events.Signer
	}{
		{"compact", record(t, sign(t, f.clusterA, appStatus(t, "cluster-a"))), "ce_sig", f.clusterA},
		{"dsse", record(t, signDSSE(t, f.clusterA, appStatus(t, "cluster-a"))), "ce_dssematerial", f.clusterA},
		{"compact, cosigned", record(t, sign(t, cosigner(t, f.stranger, f.clusterB), appStatus(t, "cluster-b"))), "ce_sig", f.clusterB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := headerValue(tc.rec, tc.want); !ok {
				t.Fatalf("no %s header", tc.want)
			}
			d, err := dec.Decode(context.Background(), tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if d.Signer.ID != tc.signer.KeyID() {
				t.Errorf("verified by %s, want %s", d.Signer.ID, tc.signer.KeyID())
			}
			if _, ok := d.Event.Extensions()[events.ExtSig]; ok {
				t.Error("the verified event kept its signature")
			}
		})
	}
}

// TestSignAsReplacesTheOtherForm signs one event in each form in turn:
// the event carries only the last.
func TestSignAsReplacesTheOtherForm(t *testing.T) {
	f := newFixture(t)
	e := signDSSE(t, f.hub, appUpsert(t, "cluster-a"))
	e = sign(t, f.hub, e)
	if _, ok := e.Extensions()[events.ExtDSSEMaterial]; ok {
		t.Error("dssematerial kept after signing in the compact form")
	}
	e = signDSSE(t, f.hub, e)
	if _, ok := e.Extensions()[events.ExtSig]; ok {
		t.Error("sig kept after signing in the DSSE form")
	}
	if _, _, err := events.NewVerifier(f.reg).Verify(e, e.Time(), nil); err != nil {
		t.Fatal(err)
	}
}
