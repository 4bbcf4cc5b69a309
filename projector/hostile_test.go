package projector_test

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// hostileLog signs Application upserts the hub would refuse today, with
// the hub's own key, and makes them records of the config topic: what
// anyone able to append to the log with that key, or a hub before its
// limits, wrote.
type hostileLog struct {
	t      *testing.T
	topics events.Topics
	signer *events.Signer
	offset int64
}

func newHostileLog(t *testing.T) *hostileLog {
	t.Helper()
	s, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	return &hostileLog{t: t, topics: events.DefaultTopics(""), signer: s}
}

// upsert is the record of an Application upsert with spec. The spec goes
// into the event's data as it is, after the data is encoded, since
// encoding/json refuses to encode one nested past 10,000 levels.
func (l *hostileLog) upsert(name string, gen int64, spec json.RawMessage) *kgo.Record {
	l.t.Helper()
	subj := events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: name}
	e, err := events.New("//argosy.dev/hub", events.TypeApplicationUpserted, subj.String(), "c1",
		schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: name, Generation: gen},
			Project: "default", Spec: json.RawMessage(`"SPEC"`)})
	if err != nil {
		l.t.Fatal(err)
	}
	data, ok := strings.CutSuffix(string(e.Data()), `"spec":"SPEC"}`)
	if !ok {
		l.t.Fatalf("the event's data %s does not end with its spec", e.Data())
	}
	e.DataEncoded = []byte(data + `"spec":` + string(spec) + `}`)
	return l.record(e)
}

func (l *hostileLog) record(e *event.Event) *kgo.Record {
	l.t.Helper()
	if err := l.signer.Sign(l.t.Context(), e); err != nil {
		l.t.Fatal(err)
	}
	r, err := events.EventRecord(l.t.Context(), e)
	if err != nil {
		l.t.Fatal(err)
	}
	r.Topic, r.Offset, r.Timestamp = l.topics[events.TopicConfig], l.offset, time.Now()
	l.offset++
	return r
}

func (l *hostileLog) decoder() *events.Decoder {
	l.t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", l.signer.Public()))),
		events.WithTopics(l.topics), events.AcceptCreateTime())
	if err != nil {
		l.t.Fatal(err)
	}
	return dec
}

// TestFoldStoresHostileSpecs: events whose specs the hub refuses today
// decode, fold, chain and store like any other, and the read API answers
// for them: the deepest spec the hub ever accepted (9,995 levels of Helm
// values), then a change from it to a spec as large as an event carries.
// A spec too deep for encoding/json (past 10,000 levels) cannot be
// decoded at all: its record is poison, for the dead-letter topic, not an
// error that stops the fold.
func TestFoldStoresHostileSpecs(t *testing.T) {
	l := newHostileLog(t)
	dec := l.decoder()
	deep, wide := readtest.DeepSpec(readtest.DeepLevels), readtest.WideSpec(events.MaxEventBytes-8<<10, read.MaxSpecDepth-1)
	var log []*events.Decoded
	for _, r := range []*kgo.Record{l.upsert("deep", 1, deep), l.upsert("deep", 2, wide)} {
		d, err := dec.Decode(t.Context(), r)
		if err != nil {
			t.Fatalf("decoding a record of %d bytes: %v", len(r.Value), err)
		}
		log = append(log, d)
	}
	if _, err := dec.Decode(t.Context(), l.upsert("deeper", 1, readtest.DeepSpec(10_001))); !events.IsPoison(err) {
		t.Errorf("a spec 10,004 levels deep: %v, want a poison record", err)
	}

	b, err := projector.FoldAll(log)
	if err != nil {
		t.Fatalf("folding: %v", err)
	}
	if len(b.Audit) != 2 || len(b.Desired) != 1 || len(b.Desired[0].Spec) != len(wide) {
		t.Fatalf("folded %d audit entries and %d Applications: want 2 and 1, with the last spec", len(b.Audit), len(b.Desired))
	}
	prev := ""
	for _, e := range b.Audit {
		if h, err := projector.Chain(prev, e); err != nil || h != e.Hash {
			t.Fatalf("entry %d: hash %s, %v, want %s", e.Offset, h, err, e.Hash)
		}
		prev = e.Hash
	}

	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Commit(t.Context(), b); err != nil {
		t.Fatalf("storing: %v", err)
	}
	srv := httptest.NewServer(read.New(store))
	defer srv.Close()
	audit, err := readtest.Get[read.List[projector.AuditRow]](t.Context(), srv.Client(), srv.URL+"/api/v1/audit")
	rows := audit.Items
	if err != nil || len(rows) != 2 {
		t.Fatalf("the read API's audit: %d entries, %v", len(rows), err)
	}
	if o, ok := read.Omitted(rows[0].Before); !ok || o.Depth != readtest.DeepLevels+3 {
		t.Errorf("the change's before is %.80s, want the marker of a spec %d levels deep", rows[0].Before, readtest.DeepLevels+3)
	}
	if !strings.HasPrefix(string(rows[0].After), `{"project":"default"`) || len(rows[0].After) != len(wide) {
		t.Errorf("the change's after is %.80s (%d bytes), want the spec as stored (%d)", rows[0].After, len(rows[0].After), len(wide))
	}
	v, err := readtest.Get[read.Verification](t.Context(), srv.Client(), srv.URL+"/api/v1/audit/verify")
	if err != nil || !v.OK {
		t.Errorf("verifying the chain: %+v, %v", v, err)
	}
}
