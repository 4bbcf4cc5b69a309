package app

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	lines := func(n int, change map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := change[i]; ok {
				if s != "" {
					b.WriteString(s + "\n")
				}
				continue
			}
			b.WriteString("l" + string(rune('a'+i-1)) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", lines(5, nil), lines(5, nil), ""},
		{"one line changed in the middle", lines(10, nil), lines(10, map[int]string{5: "X"}),
			"@@ -2,7 +2,7 @@\n lb\n lc\n ld\n-le\n+X\n lf\n lg\n lh\n"},
		{"at the start", lines(6, nil), lines(6, map[int]string{1: "X"}),
			"@@ -1,4 +1,4 @@\n-la\n+X\n lb\n lc\n ld\n"},
		{"two changes close together are one hunk", lines(12, nil), lines(12, map[int]string{2: "X", 8: "Y"}),
			"@@ -1,11 +1,11 @@\n la\n-lb\n+X\n lc\n ld\n le\n lf\n lg\n-lh\n+Y\n li\n lj\n lk\n"},
		{"far apart, two hunks", lines(20, nil), lines(20, map[int]string{2: "X", 15: "Y"}),
			"@@ -1,5 +1,5 @@\n la\n-lb\n+X\n lc\n ld\n le\n@@ -12,7 +12,7 @@\n ll\n lm\n ln\n-lo\n+Y\n lp\n lq\n lr\n"},
		{"a line added at the end", lines(3, nil), lines(3, nil) + "ld\n", "@@ -1,3 +1,4 @@\n la\n lb\n lc\n+ld\n"},
		{"a line removed", lines(3, nil), lines(3, map[int]string{2: ""}), "@@ -1,3 +1,2 @@\n la\n-lb\n lc\n"},
		{"from nothing", "", "a\n", "@@ -0,0 +1 @@\n+a\n"},
	}
	for _, tc := range tests {
		if got := unified(tc.a, tc.b); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
