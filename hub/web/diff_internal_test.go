package web

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/projector"
)

func TestLineDiff(t *testing.T) {
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(prefix + strings.Repeat("x", i%7) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name string
		a, b string
		want string // each line's op and text
	}{
		{"same", "a\nb\n", "a\nb\n", " a| b"},
		{"added", "", "a\n", "+a"},
		{"removed", "a\n", "", "-a"},
		{"middle", "a\nb\nc\nd\n", "a\ny\nc\nd\n", " a|-b|+y| c| d"},
		{"moved", "a\nb\nc\n", "b\nc\na\n", "-a| b| c|+a"},
		// Past maxDiffCells the middle is shown removed, then added.
		{"large", "h\n" + many("a", 3000) + "t\n", "h\n" + many("b", 1500) + "t\n",
			" h|" + strings.Repeat("-a|", 3000) + strings.Repeat("+b|", 1500) + " t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range lineDiff(tt.a, tt.b) {
				got = append(got, l.Op+strings.TrimRight(l.Text, "x"))
			}
			if diff := cmp.Diff(strings.Split(tt.want, "|"), got); diff != "" {
				t.Errorf("lineDiff (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMeasureBoundsIndent: projector.Measure's length is never less than what
// json.Indent writes.
func TestMeasureBoundsIndent(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":{}}],"c":"{,:}"}`, `[[[[1]]],[],{"x":null}]`, `"s"`, `12`} {
		depth, bound := projector.Measure([]byte(s))
		got := indent([]byte(s), bound)
		if len(got) > bound {
			t.Errorf("%s: indented to %d bytes, measured at most %d", s, len(got), bound)
		}
		if depth < 0 {
			t.Errorf("%s: depth %d", s, depth)
		}
	}
}
