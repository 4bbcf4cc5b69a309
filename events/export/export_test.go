package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// records are n signed status deltas as the producer encodes them.
func records(tb testing.TB, n int) []*kgo.Record {
	tb.Helper()
	signer, err := events.GenerateSigner()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]*kgo.Record, 0, n)
	for i := range n {
		c := fmt.Sprintf("c%03d", i%100)
		subj := events.Subject{Cluster: c, Kind: schemas.SubjectApplications, Namespace: "argocd", Name: fmt.Sprintf("app-%d", i%10)}
		e, err := events.New("//argosy.dev/spoke/"+c, events.TypeApplicationStatus, subj.String(), c,
			schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: c, Namespace: "argocd", Name: subj.Name, Generation: 3},
				Seq: int64(i + 1), Sync: &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("%040d", i)},
				Health: &schemas.HealthStatus{Status: "Healthy"}})
		if err != nil {
			tb.Fatal(err)
		}
		if err := signer.Sign(tb.Context(), e); err != nil {
			tb.Fatal(err)
		}
		rec, err := events.EventRecord(tb.Context(), e)
		if err != nil {
			tb.Fatal(err)
		}
		rec.Topic, rec.Offset, rec.Timestamp = "argosy.status", int64(i), time.UnixMilli(1_780_000_000_000+int64(i))
		out = append(out, rec)
	}
	return out
}

// TestRowOf: a record's place, attributes and data land in their columns;
// a transaction marker is no row; a record that is not a CloudEvent is an
// error.
func TestRowOf(t *testing.T) {
	rec := records(t, 1)[0]
	r, ok, err := RowOf(t.Context(), rec)
	if err != nil || !ok {
		t.Fatalf("RowOf = %v, %v", ok, err)
	}
	if r.Topic != "argosy.status" || r.Key != "c000" || r.Type != events.TypeApplicationStatus || r.Subject == "" ||
		r.SpecVersion != "1.0" || r.PartitionKey != "c000" || r.Sig == "" || r.Time.IsZero() || !json.Valid(r.Data) {
		t.Errorf("row %+v", r)
	}
	if _, ok, err := RowOf(t.Context(), &kgo.Record{Attrs: kgo.RecordAttrs{}, Value: []byte("x")}); ok || err == nil {
		t.Errorf("RowOf(not an event) = %v, %v, want an error", ok, err)
	}
	if _, err := NewWriter("xml", io.Discard); err == nil || !strings.Contains(err.Error(), "jsonl, csv, parquet") {
		t.Errorf("NewWriter(xml) = %v", err)
	}
}

// TestJSONLOneLinePerRow: every row is one line that decodes to the row,
// its data compacted, with data that spans lines, that is absent, or that
// holds characters encoding/json would escape.
func TestJSONLOneLinePerRow(t *testing.T) {
	at := time.Date(2026, 11, 25, 1, 2, 3, 0, time.UTC)
	rows := []Row{
		{Topic: "a", Offset: 1, LogTime: at, Time: at, ID: "1", Data: json.RawMessage("{\n  \"a\": [1,\r\n 2]\n}")},
		{Topic: "a", Offset: 2, LogTime: at, ID: "<2>", Subject: "x&y"},
		{Topic: "a", Offset: 3, LogTime: at, ID: "3", Data: json.RawMessage(`{"html":"<b>"}`)},
	}
	var out bytes.Buffer
	w, err := NewWriter("jsonl", &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(rows) {
		t.Fatalf("%d lines for %d rows:\n%s", len(lines), len(rows), out.String())
	}
	for i, line := range lines {
		var got Row
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		want := rows[i]
		if want.Data != nil {
			var c bytes.Buffer
			if err := json.Compact(&c, want.Data); err != nil {
				t.Fatal(err)
			}
			want.Data = c.Bytes()
		} else {
			want.Data = json.RawMessage("null")
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d decodes to %+v, want %+v", i, got, want)
		}
	}
}

// FuzzRowOf: no record makes RowOf panic, a row it makes has JSON data or
// none, and a binary-mode record the CloudEvents SDK reads gives the row
// the SDK's event gives.
func FuzzRowOf(f *testing.F) {
	rec := records(f, 1)[0]
	var hs []byte
	for _, h := range rec.Headers {
		hs = append(hs, h.Key+"\x00"+string(h.Value)+"\x00"...)
	}
	f.Add(hs, []byte("c1"), rec.Value)
	f.Add([]byte("content-type\x00application/cloudevents+json\x00"), []byte(nil),
		[]byte(`{"specversion":"1.0","id":"1","source":"/x","type":"t","data":{"a":1}}`))
	f.Add([]byte("ce_specversion\x001.0\x00ce_id\x00a\x00ce_time\x002026-11-25T01:02:03.5+01:00\x00ce_partitionkey\x00k\x00"), []byte("c1"), []byte(`[1]`))
	f.Fuzz(func(t *testing.T, headers, key, value []byte) {
		rec := &kgo.Record{Topic: "t", Key: key, Value: value}
		parts := bytes.Split(headers, []byte{0})
		for i := 0; i+1 < len(parts); i += 2 {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: string(parts[i]), Value: parts[i+1]})
		}
		r, ok, err := RowOf(t.Context(), rec)
		if err == nil && ok && r.Data != nil && !json.Valid(r.Data) {
			t.Errorf("data %q is not JSON", r.Data)
		}
		want := Row{Topic: rec.Topic, LogTime: rec.Timestamp.UTC(), Key: string(rec.Key)}
		if !binaryV1(rec) || want.readEvent(t.Context(), rec) != nil {
			return
		}
		if len(want.Data) == 0 || !json.Valid(want.Data) {
			want.Data = nil
		}
		if err != nil || !reflect.DeepEqual(r, want) {
			t.Errorf("RowOf = %+v, %v\nthe SDK reads %+v", r, err, want)
		}
	})
}

// BenchmarkExport measures RowOf and each writer over 10,000 status
// deltas, to io.Discard: events/s without the broker.
func BenchmarkExport(b *testing.B) {
	recs := records(b, 10_000)
	for _, format := range Formats {
		b.Run(format, func(b *testing.B) {
			n := 0
			for b.Loop() {
				w, err := NewWriter(format, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				rows := make([]Row, 0, len(recs))
				for _, rec := range recs {
					r, _, err := RowOf(b.Context(), rec)
					if err != nil {
						b.Fatal(err)
					}
					rows = append(rows, r)
				}
				if err := w.Write(rows); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
