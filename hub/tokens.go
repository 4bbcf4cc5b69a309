package hub

import (
	"unicode"
	"unicode/utf8"
)

// printable reports whether s is UTF-8 of printable characters only, as
// unicode.IsPrint has them (letters, marks, numbers, punctuation, symbols
// and the ASCII space). A name the audit records as an actor holds no
// line break, control character, escape sequence or invisible formatting
// (a right-to-left override, a zero-width space) that could fake a line of
// a log or hide what it says.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
