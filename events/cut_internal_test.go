package events

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/schemas"
)

// cutFixture is a registry that applied a cluster key's registration at
// offset 3 and its revocation at offset 7, one minute apart.
type cutFixture struct {
	r                 *Registry
	id                string
	pub               ed25519.PublicKey
	registered, ended time.Time
}

func newCutFixture(t *testing.T) cutFixture {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := cutFixture{r: NewFollowingRegistry(), id: KeyID(pub)}
	f.registered = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f.ended = f.registered.Add(time.Minute)
	f.pub = pub
	for _, d := range append(f.records(), f.records()...) { // twice: applying is idempotent
		if err := f.r.Apply(d); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// records are the fixture's trust records: the registration and the
// revocation.
func (f cutFixture) records() []*Decoded {
	reg := &Decoded{Offset: 3, LogTime: f.registered, Data: &schemas.KeyRegistered{KeyID: f.id, Owner: "c", Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(f.pub)}}
	rev := &Decoded{Offset: 7, LogTime: f.ended, Data: &schemas.KeyRevoked{KeyID: f.id, Reason: "lost"}}
	return []*Decoded{reg, rev}
}

// TestCutDecides walks the rule by which an event that names a trust
// offset is judged: records before the offset count unless appended more
// than the margin after the event; records appended the margin before the
// event count whatever offset it names; a revocation that is neither, one
// concurrent with the event, does not.
func TestCutDecides(t *testing.T) {
	f := newCutFixture(t)
	const margin = 2 * time.Second
	cases := []struct {
		name   string
		offset int64
		at     time.Time
		known  bool
		valid  bool
	}{
		{"before the registration was read", 3, f.registered.Add(time.Second), false, false},
		{"the registration read", 4, f.registered.Add(time.Second), true, true},
		{"the registration older than the margin, whatever the offset", 0, f.registered.Add(3 * time.Second), true, true},
		{"a revocation concurrent with the event", 5, f.ended.Add(time.Second), true, true},
		{"a revocation the signer had read", 8, f.ended.Add(time.Second), true, false},
		{"a revocation older than the margin, whatever the offset", 5, f.ended.Add(3 * time.Second), true, false},
		{"an offset past the revocation, the event before it", 8, f.ended.Add(-time.Second), true, true},
		{"an offset past the end: records after the event and the margin do not count", 100, f.ended.Add(-3 * time.Second), true, true},
	}
	for _, tc := range cases {
		c := cut{offset: tc.offset, at: tc.at, margin: margin}
		k, ok := f.r.keyAt(f.id, c)
		if ok != tc.known {
			t.Errorf("%s: known %t, want %t", tc.name, ok, tc.known)
			continue
		}
		if ok && k.ValidAt(tc.at) != tc.valid {
			t.Errorf("%s: valid %t, want %t (key until %s)", tc.name, k.ValidAt(tc.at), tc.valid, k.Until)
		}
	}
	if k, _ := f.r.Key(f.id); k.Until != f.ended {
		t.Errorf("Key ignores cuts: until %s, want %s", k.Until, f.ended)
	}
}

// TestFixedRegistryJudgesCutsAsFollowersDo: a fixed registry (a tool's, a
// test's) that holds the same trust records as the live readers' must
// judge an event that names a trust offset as they do, with the same
// default margin: the margin decides which records are in a cut.
func TestFixedRegistryJudgesCutsAsFollowersDo(t *testing.T) {
	f := newCutFixture(t)
	fixed := NewRegistry()
	for _, d := range f.records() {
		if err := fixed.Apply(d); err != nil {
			t.Fatal(err)
		}
	}
	at := f.ended.Add(time.Second) // a revocation concurrent with the event
	for _, r := range []*Registry{f.r, fixed} {
		c := cut{offset: 5, at: at, margin: r.clockMargin()}
		if k, ok := r.keyAt(f.id, c); !ok || !k.ValidAt(at) {
			t.Errorf("following %t, margin %s: key known %t, valid until %s; want valid at %s, as live readers with the default margin judge",
				r.following, r.clockMargin(), ok, k.Until, at)
		}
	}
}

// TestCoversCut checks when a following registry may judge by a cut:
// once it has read to the cut's offset and covers its time less the
// margin, or covers its time plus the margin whatever it read.
func TestCoversCut(t *testing.T) {
	const margin = 2 * time.Second
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := cut{offset: 10, at: at, margin: margin}
	r := NewFollowingRegistry()
	if r.coversCut(c) {
		t.Fatal("a new registry covers a cut")
	}
	r.setRead(10)
	if r.coversCut(c) {
		t.Fatal("read to the offset but covering nothing: covered")
	}
	r.Advance(at.Add(-margin))
	if !r.coversCut(c) {
		t.Fatal("read to the offset and covering the time less the margin: not covered")
	}
	r = NewFollowingRegistry()
	r.setRead(9)
	r.Advance(at.Add(margin - time.Millisecond))
	if r.coversCut(c) {
		t.Fatal("short of the offset, short of the time plus the margin: covered")
	}
	r.Advance(at.Add(margin))
	if !r.coversCut(c) {
		t.Fatal("short of the offset, covering the time plus the margin: not covered")
	}
	if !NewRegistry().coversCut(c) {
		t.Fatal("a fixed registry does not cover a cut")
	}
}

// TestTrustReadOnceAtTheEnd: a signer names the trust offset only once its
// registry's reader has read to the end.
func TestTrustReadOnceAtTheEnd(t *testing.T) {
	r := NewFollowingRegistry()
	r.setRead(5)
	if _, ok := r.TrustRead(); ok {
		t.Fatal("TrustRead is known before the reader read to the end")
	}
	r.Advance(time.Now())
	if n, ok := r.TrustRead(); !ok || n != 5 {
		t.Fatalf("TrustRead = %d, %t; want 5, true", n, ok)
	}
	if _, ok := NewRegistry().TrustRead(); ok {
		t.Fatal("a fixed registry names a trust offset")
	}
}

// TestNamedTrustOffset: only decimal digits that make an int64 name a trust
// offset, and only when the signature covers the extension.
func TestNamedTrustOffset(t *testing.T) {
	e := event.New()
	for raw, want := range map[string]int64{"0": 0, "42": 42, "007": 7, "9223372036854775807": 1<<63 - 1} {
		e.SetExtension(ExtTrustOffset, raw)
		if v, ok, err := namedTrustOffset(&e, []string{ExtPartitionKey, ExtTrustOffset}); err != nil || !ok || v != want {
			t.Errorf("%q: %d, %t, %v; want %d", raw, v, ok, err, want)
		}
	}
	for _, raw := range []string{"", "+5", "-1", "-0", " 1", "0x10", "1e3", "9223372036854775808"} {
		e.SetExtension(ExtTrustOffset, raw)
		if v, _, err := namedTrustOffset(&e, []string{ExtTrustOffset}); err == nil {
			t.Errorf("%q: named offset %d, want an error", raw, v)
		}
	}
	e.SetExtension(ExtTrustOffset, "5")
	if _, ok, err := namedTrustOffset(&e, []string{ExtPartitionKey}); ok || err != nil {
		t.Errorf("an unsigned trustoffset is taken: %t, %v", ok, err)
	}
}
