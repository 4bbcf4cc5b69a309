package readtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argosyproj/argosy/projector"
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
