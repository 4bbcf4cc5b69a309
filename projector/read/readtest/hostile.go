package readtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// Specs that cost a reader the most, for the tests and benchmarks of
// everything that shows a stored spec: the read API, the CLI and the
// dashboard. Depths are counted as the hub counts them (a scalar is depth
// 0, each object or array one level more).

// DeepLevels is how deep the Helm values of the deepest spec the hub
// accepted before it limited nesting went: 9,995 levels, which with the
// spec's own three made a spec Go's encoding/json decodes alone but not
// inside any answer of the read API.
const DeepLevels = 9995

// DeepSpec is an Application spec whose Helm valuesObject nests levels
// levels, each an object of one member: the spec is levels+3 deep.
func DeepSpec(levels int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"project":"default","source":{"repoURL":"https://git.example/deep.git","helm":{"valuesObject":`)
	b.WriteString(strings.Repeat(`{"v":`, levels-1))
	b.WriteString(`{"v":1}`)
	b.WriteString(strings.Repeat(`}`, levels-1))
	b.WriteString(`}}}`)
	return b.Bytes()
}

// WideSpec is an Application spec of about size bytes that is depth
// levels deep throughout: its Helm valuesObject holds chains of objects of
// one member, each as deep as the spec allows, so that every level is a
// line of its own once indented, and each line as far indented as the
// depth allows. It is the worst text for anything that indents or diffs
// a spec. depth must be at least 5.
func WideSpec(size, depth int) json.RawMessage {
	var b bytes.Buffer
	b.Grow(size + 1024)
	b.WriteString(`{"project":"default","source":{"repoURL":"https://git.example/wide.git","helm":{"valuesObject":{`)
	chain := depth - 4 // spec, source, helm and valuesObject are four levels
	for i := 0; b.Len() < size-64-6*chain; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%06d":`, i)
		b.WriteString(strings.Repeat(`{"v":`, chain-1))
		fmt.Fprintf(&b, `{"v":%d}`, i)
		b.WriteString(strings.Repeat(`}`, chain-1))
	}
	b.WriteString(`}}}}`)
	return b.Bytes()
}

// HugeSpecBytes is the size of the spec Hostile's audit entry changes
// from: past what any reader shows (read.MaxSpecBytes, 1 MiB).
const HugeSpecBytes = 1<<20 + 4<<10

// Hostile is Fleet with specs no reader can take whole: prod-eu's
// guestbook is wanted with DeepSpec(DeepLevels), the deepest spec the hub
// ever accepted; its audit entry (ev-guestbook) changes to that spec from
// a WideSpec of HugeSpecBytes, 8 levels deep; and billing's cluster
// published the deep spec as its own.
func Hostile() *Query {
	q := Fleet()
	deep := DeepSpec(DeepLevels)
	d := *q.AppRows[0].Desired
	d.Spec = deep
	q.AppRows[0].Desired = &d
	o := *q.AppRows[1].Observed
	o.Local = &projector.LocalApp{Project: "payments", Spec: deep, Generation: 2, EventID: "ev-published"}
	q.AppRows[1].Observed = &o
	for i, r := range q.AuditRows {
		if r.EventID == "ev-guestbook" {
			q.AuditRows[i].Before, q.AuditRows[i].After = WideSpec(HugeSpecBytes, 8), deep
		}
	}
	return q
}

// WorstUpsert is the worst Application upsert the hub accepts, signed by
// signer: annotations of annotationBytes in all (keys and values; the hub
// accepts up to 256 KiB), and a WideSpec as deep as a manifest's spec may
// be (the hub counts depth from the manifest, whose spec is one level
// down) and as large as the rest of one event allows. It returns the
// event and the size of its record, just under events.MaxEventBytes.
func WorstUpsert(ctx context.Context, signer *events.Signer, annotationBytes int) (*event.Event, int, error) {
	ann := map[string]string{}
	for i := 0; annotationBytes > 0; i++ {
		k := fmt.Sprintf("example.com/note-%d", i)
		n := min(annotationBytes-len(k), 64<<10)
		if n < 0 {
			break
		}
		ann[k] = strings.Repeat("x", n)
		annotationBytes -= len(k) + n
	}
	size := events.MaxEventBytes
	for {
		e, n, err := SignedUpsert(ctx, signer, ann, WideSpec(size, read.MaxSpecDepth-1))
		if err != nil || n <= events.MaxEventBytes {
			return e, n, err
		}
		size -= n - events.MaxEventBytes
	}
}

// SignedUpsert is an upsert of the Application argocd/worst of cluster c1
// with annotations and spec, signed by signer, and the size of its
// record.
func SignedUpsert(ctx context.Context, signer *events.Signer, annotations map[string]string, spec json.RawMessage) (*event.Event, int, error) {
	subj := events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "worst"}
	e, err := events.New("//argosy.dev/hub", events.TypeApplicationUpserted, subj.String(), "c1",
		schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "worst", Generation: 1},
			Project: "default", Annotations: annotations, Spec: spec})
	if err != nil {
		return nil, 0, err
	}
	if err := signer.Sign(ctx, e); err != nil {
		return nil, 0, err
	}
	r, err := events.EventRecord(ctx, e)
	if err != nil {
		return nil, 0, err
	}
	return e, events.RecordSize(r), nil
}

// Change is a change of an Application's spec from Before to After, for
// the readers' benchmarks.
type Change struct {
	Name          string
	Before, After json.RawMessage
	// EventBytes is the size of the record of the event that wrote After.
	EventBytes int
}

// WorstChanges returns the changes the readers' benchmarks measure, each
// to a spec from a different one of the same shape whose every nested
// line differs:
//   - deep-9995: to DeepSpec(DeepLevels), the worst the hub accepted
//     before it limited nesting;
//   - accepted-annotations: to the spec of WorstUpsert with 256 KiB of
//     annotations, the largest and deepest manifest the hub accepts;
//   - accepted-spec: to the spec of WorstUpsert without annotations (they
//     are not in the views), the largest and deepest spec it accepts.
func WorstChanges(ctx context.Context) ([]Change, error) {
	signer, err := events.GenerateSigner()
	if err != nil {
		return nil, err
	}
	deep := DeepSpec(DeepLevels)
	_, n, err := SignedUpsert(ctx, signer, nil, deep)
	if err != nil {
		return nil, err
	}
	out := []Change{{Name: "deep-9995", Before: bytes.ReplaceAll(deep, []byte(`"v"`), []byte(`"w"`)), After: deep, EventBytes: n}}
	for _, c := range []struct {
		name string
		ann  int
	}{{"accepted-annotations", 256 << 10}, {"accepted-spec", 0}} {
		e, n, err := WorstUpsert(ctx, signer, c.ann)
		if err != nil {
			return nil, err
		}
		var p schemas.ApplicationUpserted
		if err := e.DataAs(&p); err != nil {
			return nil, err
		}
		out = append(out, Change{Name: c.name, Before: bytes.ReplaceAll(p.Spec, []byte(`"v"`), []byte(`"w"`)), After: p.Spec, EventBytes: n})
	}
	return out, nil
}
