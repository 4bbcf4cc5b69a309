//go:build integration

package export_test

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/export"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
	"github.com/argosyproj/argosy/schemas"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

//go:embed testdata/requirements.txt
var requirements []byte

// logOf appends a workload to new topics: heartbeats on the status topic;
// between two time marks, a record that is not a CloudEvent, and events in
// a committed transaction and in an aborted one on the config topic. It
// returns the topics, the marks, and the records a reader of committed
// records sees, as appended.
func logOf(t *testing.T) (events.Topics, [2]time.Time, []*kgo.Record) {
	t.Helper()
	topics := events.DefaultTopics(kafkatest.Prefix(t))
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(2, 3), 1, 1); err != nil {
		t.Fatal(err)
	}
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	p, err := events.NewProducer(kafkatest.Client(t, events.ProducerOpts(nil)...), signer, topics)
	if err != nil {
		t.Fatal(err)
	}
	heartbeat := func(i int) *event.Event {
		c := fmt.Sprintf("c%d", i%4)
		e, err := events.New("//argosy.dev/spoke/"+c, events.TypeHeartbeat, events.Subject{Cluster: c}.String(), c,
			schemas.Heartbeat{Cluster: c, AgentVersion: "v1 \"quoted\", with a comma", Mode: "managed", Seq: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var marks [2]time.Time
	var all []*kgo.Record
	for i := range 40 {
		mark := func(m int) {
			time.Sleep(20 * time.Millisecond)
			marks[m] = time.Now()
			time.Sleep(20 * time.Millisecond)
		}
		switch i {
		case 15:
			mark(0)
		case 20:
			junk := &kgo.Record{Topic: topics[events.TopicStatus], Key: []byte("c0"), Value: []byte("not an event")}
			if err := kafkatest.Client(t).ProduceSync(t.Context(), junk).FirstErr(); err != nil {
				t.Fatal(err)
			}
			all = append(all, transaction(t, signer, topics[events.TopicConfig], kgo.TryCommit, nil, heartbeat(100), heartbeat(101))...)
			transaction(t, signer, topics[events.TopicConfig], kgo.TryAbort, nil, heartbeat(102))
		case 30:
			// The second mark falls between an aborted event and its
			// abort marker: a range that ends there ends with a record a
			// read-committed reader never gets.
			transaction(t, signer, topics[events.TopicConfig], kgo.TryAbort, func() { mark(1) }, heartbeat(103))
		}
		recs, err := p.Publish(t.Context(), heartbeat(i))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	return topics, marks, all
}

// transaction appends es, signed, to topic in one transaction that ends
// with end, after calling between if it is not nil, and returns their
// records.
func transaction(t *testing.T, signer *events.Signer, topic string, end kgo.TransactionEndTry, between func(), es ...*event.Event) []*kgo.Record {
	t.Helper()
	cl := kafkatest.Client(t, kgo.TransactionalID(topic+fmt.Sprint(end)))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, e := range es {
		if err := signer.Sign(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		rec, err := events.EventRecord(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		rec.Topic = topic
		recs = append(recs, rec)
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	if err := cl.EndTransaction(t.Context(), end); err != nil {
		t.Fatal(err)
	}
	return recs
}

// exportTo exports r in format to a file and returns its path.
func exportTo(t *testing.T, r export.Range, format string) (string, export.Progress) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out."+format)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := export.NewWriter(format, f)
	if err != nil {
		t.Fatal(err)
	}
	var last export.Progress
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := export.Export(ctx, []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, r, w, slog.New(slog.DiscardHandler),
		func(p export.Progress) { last = p }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, last
}

// wantRows are the rows of recs appended in r's range, by topic,
// partition and offset.
func wantRows(t *testing.T, recs []*kgo.Record, r export.Range) map[string]export.Row {
	t.Helper()
	out := map[string]export.Row{}
	for _, rec := range recs {
		ms := rec.Timestamp.UnixMilli()
		if (!r.From.IsZero() && ms < r.From.UnixMilli()) || (!r.To.IsZero() && ms >= r.To.UnixMilli()) {
			continue
		}
		// Read back, records carry the broker's append time.
		row, ok, err := export.RowOf(t.Context(), rec)
		if err != nil || !ok {
			t.Fatalf("row of %v: %v", rec, err)
		}
		row.LogTime = time.Time{}
		out[place(row)] = row
	}
	return out
}

func place(r export.Row) string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }

// compare checks got against want, ignoring log times (the records as
// produced do not carry the broker's), which must be set.
func compare(t *testing.T, format string, want map[string]export.Row, got []export.Row) {
	t.Helper()
	have := map[string]export.Row{}
	for _, r := range got {
		if r.LogTime.IsZero() {
			t.Errorf("%s: %s has no log time", format, place(r))
		}
		r.LogTime = time.Time{}
		have[place(r)] = r
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("%s rows differ (-want +got):\n%s", format, diff)
	}
}

// TestExportRoundTrips exports a log in every format, all of it, from a
// time on, and between two times, and reads each back: JSON Lines and CSV
// with Go's decoders, Parquet with Apache Arrow (pyarrow), a reader
// independent of the writer. Every row must be an event as appended, in
// the range, committed: no row for a transaction marker, an aborted event
// or a record that is not a CloudEvent, which is counted as skipped.
func TestExportRoundTrips(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	python, err := toolcache.PythonVenv(ctx, "export-parquet", requirements)
	if err != nil {
		t.Fatal(err)
	}
	topics, marks, recs := logOf(t)
	for _, r := range []export.Range{{}, {From: marks[0]}, {From: marks[0], To: marks[1]}} {
		r.Topics = []string{topics[events.TopicStatus], topics[events.TopicConfig]}
		want := wantRows(t, recs, r)
		if len(want) == 0 || (!r.From.IsZero() && len(want) >= len(recs)) {
			t.Fatalf("%d rows wanted of %d in %v: the marks do not split the log", len(want), len(recs), r)
		}
		for _, format := range export.Formats {
			path, progress := exportTo(t, r, format)
			if !progress.Done || progress.Rows != int64(len(want)) || progress.Skipped != 1 || progress.Records != progress.Total {
				t.Errorf("%s in %v: progress %+v, want done with %d rows and the one record that is no event skipped", format, r, progress, len(want))
			}
			var got []export.Row
			switch format {
			case "jsonl":
				got = readJSONL(t, path)
			case "csv":
				got = readCSV(t, path)
			case "parquet":
				got = readParquet(t, python, path)
			}
			compare(t, format, want, got)
		}
	}
}

func readJSONL(t *testing.T, path string) []export.Row {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []export.Row
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var r export.Row
		if err := dec.Decode(&r); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}

func readCSV(t *testing.T, path string) []export.Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || strings.Join(lines[0], ",") != strings.Join(export.Columns, ",") {
		t.Fatalf("CSV header %v, want %v", lines[:1], export.Columns)
	}
	var out []export.Row
	for _, l := range lines[1:] {
		part, err1 := strconv.ParseInt(l[1], 10, 32)
		off, err2 := strconv.ParseInt(l[2], 10, 64)
		logTime, err3 := time.Parse(time.RFC3339Nano, l[3])
		at, err4 := time.Parse(time.RFC3339Nano, l[10])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("CSV row %v: %v", l, err)
		}
		out = append(out, export.Row{Topic: l[0], Partition: int32(part), Offset: off, LogTime: logTime, Key: l[4], ID: l[5], Source: l[6],
			Type: l[7], SpecVersion: l[8], Subject: l[9], Time: at, DataContentType: l[11], DataSchema: l[12], PartitionKey: l[13],
			DSSEMaterial: l[14], Sig: l[15], SignedExtAttrs: l[16], Data: json.RawMessage(l[17])})
	}
	return out
}

// readParquet reads path with pyarrow and checks its column types.
func readParquet(t *testing.T, python, path string) []export.Row {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), python, "testdata/read_parquet.py", path)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("pyarrow: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var types map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &types); err != nil {
		t.Fatal(err)
	}
	for col, want := range map[string]string{"partition": "int32", "offset": "int64", "logtime": "timestamp[ms, tz=UTC]",
		"time": "timestamp[us, tz=UTC]", "type": "string", "id": "string"} {
		if types[col] != want {
			t.Errorf("pyarrow reads column %s as %s, want %s", col, types[col], want)
		}
	}
	var rows []export.Row
	for _, l := range lines[1:] {
		var r struct {
			export.Row
			Data string `json:"data"` // a JSON column reads as its text
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("pyarrow row %s: %v", l, err)
		}
		r.Row.Data = json.RawMessage(r.Data)
		rows = append(rows, r.Row)
	}
	return rows
}
