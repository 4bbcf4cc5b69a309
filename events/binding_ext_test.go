package events_test

import (
	"context"
	"errors"
	"testing"

	"github.com/argosyproj/argosy/events"
)

// TestRequestBindingSigned checks that the idempotency key's reference and
// the request's digest a hub write carries are signed: they survive
// verification, which strips unsigned extensions, and a changed digest
// does not verify.
func TestRequestBindingSigned(t *testing.T) {
	f := newFixture(t)
	dec, err := events.NewDecoder(events.NewVerifier(f.reg), events.AcceptCreateTime())
	if err != nil {
		t.Fatal(err)
	}
	e := appUpsert(t, "cluster-a")
	e.SetExtension(events.ExtIdempotencyKey, "0123456789abcdef0123456789abcdef")
	e.SetExtension(events.ExtRequestDigest, "aa")
	r := record(t, sign(t, f.hub, e))
	d, err := dec.Decode(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ext := d.Event.Extensions()
	if ext[events.ExtIdempotencyKey] != "0123456789abcdef0123456789abcdef" || ext[events.ExtRequestDigest] != "aa" {
		t.Errorf("extensions after verification %v, want the key's reference and the digest", ext)
	}
	for i, h := range r.Headers {
		if h.Key == "ce_"+events.ExtRequestDigest {
			r.Headers[i].Value = []byte("bb")
		}
	}
	if _, err := dec.Decode(context.Background(), r); !errors.Is(err, events.ErrBadSignature) {
		t.Errorf("a changed digest = %v, want %v", err, events.ErrBadSignature)
	}
}
