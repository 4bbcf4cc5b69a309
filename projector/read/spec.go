package read

import (
	"encoding/json"

	"github.com/argosyproj/argosy/projector"
)

// The read API answers with specs as the fold stored them, and the fold
// stores whatever a signed event on the log carried (package projector
// says why that is not bounded by the hub's limits). A spec past the
// limits below is left out of an answer and a marker object stands in its
// place, so that every answer decodes (Go's encoding/json refuses nesting
// past 10,000 levels, and an answer wraps a spec in a few levels of its
// own) and costs memory in proportion to what a caller can use. The store
// leaves out, unread, a spec larger than MaxSpecBytes or past the answer's
// MaxAnswerSpecBytes, with the same marker; an answer passes its markers
// on as they are.
const (
	// MaxSpecDepth is the deepest spec an answer carries:
	// projector.MaxSpecDepth.
	MaxSpecDepth = projector.MaxSpecDepth
	// MaxSpecBytes is the largest spec an answer carries:
	// projector.MaxSpecBytes, twice the largest event.
	MaxSpecBytes = projector.MaxSpecBytes
	// MaxAnswerSpecBytes bounds the specs of one answer together:
	// projector.MaxAnswerSpecBytes. An answer lists up to MaxAuditLimit
	// entries, each of which may carry two specs of up to MaxSpecBytes.
	// Specs past it are left out, for a caller to read with fewer entries
	// per request.
	MaxAnswerSpecBytes = projector.MaxAnswerSpecBytes
)

// Reasons a spec is left out of an answer (OmittedSpec.Reason): it is
// deeper than MaxSpecDepth, larger than MaxSpecBytes, or the answer's
// specs before it reached MaxAnswerSpecBytes.
const (
	OmittedDepth  = projector.OmittedDepth
	OmittedSize   = projector.OmittedSize
	OmittedAnswer = projector.OmittedAnswer
)

// OmittedSpec says why a spec was left out of an answer, and how deep and
// how large the stored spec is. In an answer it stands where the spec
// would, as {"$omitted": {...}}; openapi.yaml documents it as OmittedSpec.
type OmittedSpec = projector.OmittedSpec

// Bound returns raw, or the marker that stands for it when it is deeper
// than MaxSpecDepth or larger than MaxSpecBytes. It reads raw once and
// allocates only for a marker.
func Bound(raw json.RawMessage) json.RawMessage {
	return newBudget().bound(raw)
}

// budget is what is left of an answer's MaxAnswerSpecBytes.
type budget struct{ b *projector.SpecBudget }

func newBudget() *budget { return &budget{projector.NewSpecBudget()} }

// bound returns raw, or the marker that stands for it when it is past
// the limits or past what is left of the answer's budget, which a spec
// it returns spends. A marker the store put in a spec's place is returned
// as it is, and spends nothing.
func (b *budget) bound(raw json.RawMessage) json.RawMessage {
	if _, ok := Omitted(raw); ok {
		return raw
	}
	o, past := check(raw, MaxSpecDepth, MaxSpecBytes)
	if !past {
		if o.Reason = b.b.Take(len(raw)); o.Reason == "" {
			return raw
		}
	}
	return projector.Marker(o)
}

// check says whether raw is past maxDepth or maxBytes, and why. It reads
// raw once, without recursion, whatever its depth.
func check(raw []byte, maxDepth, maxBytes int) (OmittedSpec, bool) {
	o := OmittedSpec{Depth: Depth(raw), Bytes: len(raw)}
	switch {
	case o.Depth > maxDepth:
		o.Reason = OmittedDepth
	case o.Bytes > maxBytes:
		o.Reason = OmittedSize
	default:
		return o, false
	}
	return o, true
}

// Omitted returns what the marker raw says, when raw is one.
func Omitted(raw json.RawMessage) (OmittedSpec, bool) { return projector.Omitted(raw) }

// Depth is the nesting of the JSON text raw: 0 for a scalar, each object
// or array one level more (projector.Measure).
func Depth(raw []byte) int {
	d, _ := projector.Measure(raw)
	return d
}

// boundApps bounds the specs of apps' rows, copying what it changes: the
// rows may share their desired and observed state with the store's.
func boundApps(apps []App) {
	b := newBudget()
	for i := range apps {
		if d := apps[i].Desired; d != nil {
			if s := b.bound(d.Spec); !sameBytes(s, d.Spec) {
				c := *d
				c.Spec = s
				apps[i].Desired = &c
			}
		}
		if o := apps[i].Observed; o != nil && o.Local != nil {
			if s := b.bound(o.Local.Spec); !sameBytes(s, o.Local.Spec) {
				l, c := *o.Local, *o
				l.Spec = s
				c.Local = &l
				apps[i].Observed = &c
			}
		}
	}
}

// sameBytes reports whether a and b are the same bytes in memory: bound
// returns its argument itself when it keeps it.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
