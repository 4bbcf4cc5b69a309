package events_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/internal/golden"
)

// packHeaders encodes headers for the fuzzer as "key\x00value\n" lines.
func packHeaders(hs []kgo.RecordHeader) []byte {
	var b bytes.Buffer
	for _, h := range hs {
		b.WriteString(h.Key)
		b.WriteByte(0)
		b.Write(h.Value)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func unpackHeaders(b []byte) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{0})
		if ok {
			hs = append(hs, kgo.RecordHeader{Key: string(k), Value: v})
		}
	}
	return hs
}

func seedGolden(f *testing.F) {
	for _, path := range goldenFiles(f) {
		s, err := golden.Read(path)
		if err != nil {
			f.Fatal(err)
		}
		r := s.Record()
		f.Add(r.Key, r.Value, packHeaders(r.Headers))
	}
	f.Add([]byte(nil), []byte("{}"), []byte("ce_specversion\x001.0\n"))
	f.Add([]byte("k"), []byte(`{"specversion":"1.0"}`), []byte("content-type\x00application/cloudevents+json\n"))
}

// FuzzDecode feeds arbitrary records to the full decoder. It must never
// panic, must fail only with a *DecodeError, and an event it accepts must
// decode the same after being written back to a record.
func FuzzDecode(f *testing.F) {
	seedGolden(f)
	dec := goldenDecoder(f)
	f.Fuzz(func(t *testing.T, key, value, headers []byte) {
		rec := &kgo.Record{Key: key, Value: value, Headers: unpackHeaders(headers), Timestamp: golden.SampleLogTime}
		d, err := dec.Decode(context.Background(), rec)
		if err != nil {
			var de *events.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		if d.Spec.Type != d.Event.Type() {
			t.Fatalf("spec %s for event %s", d.Spec.Type, d.Event.Type())
		}
		// The verified event carries only signed extensions, so it must
		// still verify once written back out, with the same data.
		orig, err := events.ParseRecord(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		out := d.Event.Clone()
		// Restore the verification material the verified copy dropped.
		for _, name := range []string{events.ExtDSSEMaterial, events.ExtSig, events.ExtSignedExtAttrs} {
			if v, ok := orig.Extensions()[name]; ok {
				out.SetExtension(name, v)
			}
		}
		again, err := events.EventRecord(context.Background(), &out)
		if err != nil {
			t.Fatal(err)
		}
		again.Timestamp = rec.Timestamp
		d2, err := dec.Decode(context.Background(), again)
		if err != nil {
			t.Fatalf("accepted event does not decode again: %v", err)
		}
		if !bytes.Equal(d2.Event.Data(), d.Event.Data()) {
			t.Fatalf("data changed: %q -> %q", d.Event.Data(), d2.Event.Data())
		}
	})
}

// FuzzParseRecord checks the binding alone: binary or structured, it never
// panics and fails only with ErrMalformed.
func FuzzParseRecord(f *testing.F) {
	seedGolden(f)
	f.Fuzz(func(t *testing.T, key, value, headers []byte) {
		_, err := events.ParseRecord(context.Background(), &kgo.Record{Key: key, Value: value, Headers: unpackHeaders(headers)})
		if err != nil && !errors.Is(err, events.ErrMalformed) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

// FuzzParseSubject checks that every subject that parses prints back the same.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"clusters/a", "clusters/a/applications/argocd/guestbook", "clusters//x", "keys/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := events.ParseSubject(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("ParseSubject(%q).String() = %q", s, p.String())
		}
	})
}
