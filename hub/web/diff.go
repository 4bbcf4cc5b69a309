package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// A spec change is shown as a line diff of the two specs indented. The
// specs are what the fold stored, which is whatever a signed event
// carried: the hub's limits bound what it writes now, not what it wrote
// before them, nor what others able to append to the log write. So the
// cost of a diff is bounded here, whatever the specs: each is read once
// to measure its depth and its indented size before anything is built,
// and a spec past the limits below is not shown, with a note that says
// how deep or large it is.
const (
	// maxDiffText bounds each side's indented text. Indenting writes each
	// level's indent on every line, so the text of a deep spec grows with
	// its depth; the bound is on what is built, not on what was stored.
	maxDiffText = 256 << 10
	// maxPageDiff bounds the diffs of one audit page, as the HTML they
	// are written as: a page lists up to read.MaxAuditLimit changes, each
	// of which may be just under maxDiffText a side. A change is diffed
	// only while the page's diffs are shorter, and its indented text fits
	// in what is left, so a page's diffs may pass it by one change's.
	maxPageDiff = 4 << 20
	// maxDiffCells bounds the line-by-line comparison of what changed
	// (the lines between the common head and tail), in lines before
	// times lines after. A larger change is shown as its old lines
	// removed and its new lines added, which costs their length only.
	maxDiffCells = 1 << 22
)

// diffLine is one line of a spec diff: Op is "+", "-" or " ".
type diffLine struct {
	Op, Text string
}

// specChange is the change of a spec the audit page shows: its lines, or
// why they are not shown.
type specChange struct {
	// Lines are the diff's lines as HTML, each a span whose class says
	// whether it was added, removed or kept. They are written here rather
	// than by the template, which spends some thirty allocations on each
	// line: a diff may have tens of thousands.
	Lines template.HTML
	// Hidden says why the change is not shown: a spec too deep or too
	// large, with its size.
	Hidden string
}

// specSide is one side of a change, measured before it is indented.
type specSide struct {
	name     string
	raw      json.RawMessage
	depth    int
	indented int // an upper bound of the indented text's length
}

// specDiff is the change from before to after, nil when both are absent.
// left is how much of maxPageDiff the page has left: a change whose
// indented text is longer is not shown.
func specDiff(before, after json.RawMessage, left int) *specChange {
	sides := [2]specSide{{name: "before", raw: before}, {name: "after", raw: after}}
	for i := range sides {
		s := &sides[i]
		if isNull(s.raw) {
			s.raw = nil
		}
		s.depth, s.indented = projector.Measure(s.raw)
	}
	if sides[0].raw == nil && sides[1].raw == nil {
		return nil
	}
	if why := hidden(sides); why != "" {
		return &specChange{Hidden: why}
	}
	if n := sides[0].indented + sides[1].indented; n > left {
		return &specChange{Hidden: fmt.Sprintf("Not shown: this change is %s indented, and the changes above it fill what one page shows (%s). "+
			"Filter the timeline to this object, or lower the limit, to see it.", size(n), size(maxPageDiff))}
	}
	return &specChange{Lines: diffHTML(lineDiff(indent(sides[0].raw, sides[0].indented), indent(sides[1].raw, sides[1].indented)))}
}

// diffHTML writes a diff's lines as the audit page shows them.
func diffHTML(ls []diffLine) template.HTML {
	n := 0
	for _, l := range ls {
		n += len(l.Text) + len(`<span class="ddel">- </span>`) + 1
	}
	var b strings.Builder
	b.Grow(n + n/8) // escaping lengthens quotes, which JSON has many of
	for _, l := range ls {
		class := "d"
		switch l.Op {
		case "+":
			class = "dadd"
		case "-":
			class = "ddel"
		}
		b.WriteString(`<span class="` + class + `">` + l.Op + " ")
		b.WriteString(template.HTMLEscapeString(l.Text))
		b.WriteString("</span>\n")
	}
	// Every text written above is a constant or escaped.
	return template.HTML(b.String())
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// hidden says why the specs are not shown, or "".
func hidden(sides [2]specSide) string {
	if why := unread(sides); why != "" {
		return why
	}
	var deep, large []string
	for _, s := range sides {
		switch {
		case s.depth > read.MaxSpecDepth:
			deep = append(deep, fmt.Sprintf("the spec %s the change nests %s levels (%s)", s.name, count(s.depth), size(len(s.raw))))
		case s.indented > maxDiffText:
			large = append(large, fmt.Sprintf("the spec %s the change is %s, %s indented", s.name, size(len(s.raw)), size(s.indented)))
		}
	}
	switch {
	case len(deep) > 0:
		return fmt.Sprintf("Too deep to show: %s; the dashboard shows specs up to %d levels deep. The log keeps the spec.",
			strings.Join(deep, ", and "), read.MaxSpecDepth)
	case len(large) > 0:
		return fmt.Sprintf("Too large to show: %s; the dashboard shows specs up to %s indented. The log keeps the spec.",
			strings.Join(large, ", and "), size(maxDiffText))
	}
	return ""
}

// unread says which specs the store left out unread, with a marker in
// their place (projector.Omitted), or "".
func unread(sides [2]specSide) string {
	var large, past []string
	for _, s := range sides {
		o, ok := projector.Omitted(s.raw)
		if !ok {
			continue
		}
		what := fmt.Sprintf("the spec %s the change is %s", s.name, size(o.Bytes))
		switch o.Reason {
		case projector.OmittedAnswer:
			past = append(past, what)
		default:
			large = append(large, what)
		}
	}
	switch {
	case len(large) > 0:
		return fmt.Sprintf("Too large to show: %s; the dashboard reads specs up to %s. The log keeps the spec.",
			strings.Join(large, ", and "), size(projector.MaxSpecBytes))
	case len(past) > 0:
		return fmt.Sprintf("Not shown: %s, and the changes above it fill what one page reads (%s of specs). "+
			"Filter the timeline to this object, or lower the limit, to see it.",
			strings.Join(past, ", and "), size(projector.MaxAnswerSpecBytes))
	}
	return ""
}

// indent is raw indented, with a final newline; raw as it is when it is
// not JSON. bound is projector.Measure's upper bound of its length.
func indent(raw json.RawMessage, bound int) string {
	if raw == nil {
		return ""
	}
	var buf bytes.Buffer
	buf.Grow(bound + 1)
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw) + "\n"
	}
	buf.WriteByte('\n')
	return buf.String()
}

// lineDiff is the line diff of a and b: the lines both start and end with
// are kept, and the lines between are compared line by line when there
// are few enough, and shown removed and added otherwise.
func lineDiff(a, b string) []diffLine {
	la, lb := lines(a), lines(b)
	head := 0
	for head < len(la) && head < len(lb) && la[head] == lb[head] {
		head++
	}
	tail := 0
	for tail < len(la)-head && tail < len(lb)-head && la[len(la)-1-tail] == lb[len(lb)-1-tail] {
		tail++
	}
	out := make([]diffLine, 0, len(la)+len(lb)-head-tail)
	out = appendLines(out, " ", la[:head])
	ma, mb := la[head:len(la)-tail], lb[head:len(lb)-tail]
	if len(ma)*len(mb) <= maxDiffCells {
		out = appendMiddle(out, ma, mb)
	} else {
		out = appendLines(appendLines(out, "-", ma), "+", mb)
	}
	return appendLines(out, " ", la[len(la)-tail:])
}

// lines splits indented text into its lines, without their newlines.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func appendLines(out []diffLine, op string, ls []string) []diffLine {
	for _, l := range ls {
		out = append(out, diffLine{op, l})
	}
	return out
}

// appendMiddle compares the lines between the common head and tail one
// by one: at most maxDiffCells steps.
func appendMiddle(out []diffLine, a, b []string) []diffLine {
	if len(a) == 0 || len(b) == 0 {
		return appendLines(appendLines(out, "-", a), "+", b)
	}
	dmp := diffmatchpatch.New()
	ca, cb, table := dmp.DiffLinesToChars(strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), table) {
		op := " "
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = "+"
		case diffmatchpatch.DiffDelete:
			op = "-"
		}
		out = appendLines(out, op, lines(d.Text))
	}
	return out
}

// count writes n with thousands separators: 9,998.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// size writes a size in bytes for people: 812 bytes, 71.3 KiB, 2.4 MiB.
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
