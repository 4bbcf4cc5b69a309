package app

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is how many unchanged lines a hunk shows around a change,
// as diff -u does.
const diffContext = 3

// diffLine is one line of a diff: op is ' ', '-' or '+'.
type diffLine struct {
	op   byte
	text string
}

// unified is the line diff of a and b in the unified format diff -u
// writes, without its file header: hunks of the changed lines with
// diffContext lines around them. It is empty when a and b are equal.
func unified(a, b string) string {
	ls := diffLines(a, b)
	var out strings.Builder
	for start := 0; start < len(ls); {
		first := nextChange(ls, start)
		if first == len(ls) {
			break
		}
		from, to := max(first-diffContext, 0), hunkEnd(ls, first)
		writeHunk(&out, ls, from, to)
		start = to
	}
	return out.String()
}

// diffLines is a and b compared line by line.
func diffLines(a, b string) []diffLine {
	dmp := diffmatchpatch.New()
	ca, cb, table := dmp.DiffLinesToChars(a, b)
	var out []diffLine
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), table) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				out = append(out, diffLine{op, strings.TrimSuffix(l, "\n")})
			}
		}
	}
	return out
}

// nextChange is the index of the first changed line from i, or len(ls).
func nextChange(ls []diffLine, i int) int {
	for i < len(ls) && ls[i].op == ' ' {
		i++
	}
	return i
}

// hunkEnd is where the hunk that holds the change at i ends: diffContext
// lines after its last change, a change closer than twice that to the
// one before it joining the same hunk.
func hunkEnd(ls []diffLine, i int) int {
	for {
		for i < len(ls) && ls[i].op != ' ' {
			i++
		}
		next := nextChange(ls, i)
		if next == len(ls) || next-i > 2*diffContext {
			return min(i+diffContext, len(ls))
		}
		i = next
	}
}

// writeHunk writes the lines [from, to) of ls with their header, which
// numbers the lines of each side from 1.
func writeHunk(out *strings.Builder, ls []diffLine, from, to int) {
	aStart, bStart := 1, 1
	for _, l := range ls[:from] {
		aStart += count(l.op != '+')
		bStart += count(l.op != '-')
	}
	var aLen, bLen int
	for _, l := range ls[from:to] {
		aLen += count(l.op != '+')
		bLen += count(l.op != '-')
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, l := range ls[from:to] {
		out.WriteByte(l.op)
		out.WriteString(l.text)
		out.WriteByte('\n')
	}
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hunkRange is a side's range in a hunk header: an empty side is named by
// the line before it, as diff -u does.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
