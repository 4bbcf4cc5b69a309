package projector

import (
	"bytes"
	"encoding/json"

	"github.com/argosyproj/argosy/events"
)

// The fold stores specs as a signed event on the log carried them: the
// hub's limits on what it accepts bound what it writes today, but not what
// it wrote before them, nor what anyone else able to append to the config
// topic writes. The limits below bound what one read of the views carries:
// a store leaves out a spec past them without reading it, and the read API
// leaves out what it reads past them, each with a marker object in the
// spec's place (package projector/read documents the answers).
const (
	// MaxSpecDepth is the deepest spec a read carries, counted as the hub
	// counts (a scalar is depth 0, each object or array one level more):
	// the hub's own limit, hub/api.MaxDepth, which a test of the dashboard
	// holds equal to it. A spec the hub accepts is nested in its
	// manifest, so it is always shallower.
	MaxSpecDepth = 100
	// MaxSpecBytes is the largest spec a read carries: twice the largest
	// event, as the fold's re-encoding of a spec can grow it
	// (encoding/json writes <, > and & as \u003c, \u003e and \u0026).
	MaxSpecBytes = 2 * events.MaxEventBytes
	// MaxAnswerSpecBytes bounds the specs of one read together: an audit
	// answer lists up to 1,000 entries, each of which may carry two specs
	// of up to MaxSpecBytes. Specs past it are left out, for a caller to
	// read with fewer entries per request.
	MaxAnswerSpecBytes = 16 << 20
)

// Reasons a spec is left out of a read (OmittedSpec.Reason): it is deeper
// than MaxSpecDepth, larger than MaxSpecBytes, or the specs before it
// reached MaxAnswerSpecBytes.
const (
	OmittedDepth  = "depth"
	OmittedSize   = "size"
	OmittedAnswer = "answer"
)

// omittedKey is the one member of the marker object. No Argo CD spec has
// a member of that name at its top (Kubernetes field names are
// identifiers), so a marker is never taken for a spec.
const omittedKey = "$omitted"

// maxMarkerBytes bounds the text of a marker: Omitted reads nothing
// longer.
const maxMarkerBytes = 256

// OmittedSpec says why a spec was left out of a read, and how deep and how
// large the stored spec is. It stands where the spec would, as
// {"$omitted": {...}} (Marker).
type OmittedSpec struct {
	// Reason is OmittedDepth, OmittedSize or OmittedAnswer.
	Reason string `json:"reason"`
	// Depth is the stored spec's nesting, counted as MaxSpecDepth is; 0
	// when the spec was left out unread, as a store leaves out a spec
	// larger than MaxSpecBytes or past MaxAnswerSpecBytes.
	Depth int `json:"depth"`
	// Bytes is the stored spec's size.
	Bytes int `json:"bytes"`
}

// Marker returns the marker object that stands for a spec left out for o.
func Marker(o OmittedSpec) json.RawMessage {
	// A string and two ints always encode.
	m, err := json.Marshal(map[string]OmittedSpec{omittedKey: o})
	if err != nil {
		return json.RawMessage(`{"` + omittedKey + `":{}}`)
	}
	return m
}

// Omitted returns what the marker raw says, when raw is one.
func Omitted(raw json.RawMessage) (OmittedSpec, bool) {
	raw = bytes.TrimSpace(raw)
	if !bytes.HasPrefix(raw, []byte(`{"`+omittedKey+`"`)) || len(raw) > maxMarkerBytes {
		return OmittedSpec{}, false
	}
	var m map[string]OmittedSpec
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return OmittedSpec{}, false
	}
	o, ok := m[omittedKey]
	return o, ok && o.Reason != ""
}

// SpecBudget is what is left of one read's MaxAnswerSpecBytes, which each
// spec it lets through spends.
type SpecBudget struct{ left, max int }

// NewSpecBudget returns a budget of MaxAnswerSpecBytes for specs up to
// MaxSpecBytes each.
func NewSpecBudget() *SpecBudget { return NewSpecBudgetOf(MaxSpecBytes, MaxAnswerSpecBytes) }

// NewSpecBudgetOf returns a budget of answer bytes for specs up to maxSpec
// bytes each.
func NewSpecBudgetOf(maxSpec, answer int) *SpecBudget { return &SpecBudget{left: answer, max: maxSpec} }

// Left is what is left of the budget.
func (b *SpecBudget) Left() int { return b.left }

// Max is the largest spec the budget lets through.
func (b *SpecBudget) Max() int { return b.max }

// Take says why a spec of n bytes is left out ("" if it is not), and
// spends n of the budget when it is not.
func (b *SpecBudget) Take(n int) string {
	switch {
	case n > b.max:
		return OmittedSize
	case n > b.left:
		return OmittedAnswer
	}
	b.left -= n
	return ""
}

// Measure reads the JSON text raw once and returns its nesting depth (0
// for a scalar, each object or array one level more) and an upper bound
// of the length json.Indent writes for it with a two-space indent: every
// bracket and comma starts a line indented by its depth, every colon
// gains a space. It counts brackets outside strings, so it costs the same
// for any depth; for text that is not JSON it still ends, with numbers
// that mean little.
func Measure(raw []byte) (depth, indented int) {
	level, deepest, n := 0, 0, len(raw)+1
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			level++
			deepest = max(deepest, level)
			n += 1 + 2*level
		case c == '}' || c == ']':
			level--
			n += 1 + 2*max(level, 0)
		case c == ',':
			n += 1 + 2*max(level, 0)
		case c == ':':
			n++
		}
	}
	return deepest, n
}
