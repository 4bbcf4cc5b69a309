package kafkatest

import (
	"strings"
	"testing"
)

func TestPrefix(t *testing.T) {
	t.Run("a/b c#1,(x)é", func(t *testing.T) {
		got := Prefix(t)
		want := "t.TestPrefix.a.b_c_1__x__."
		if !strings.HasPrefix(got, want) || len(got) != len(want)+9 {
			t.Errorf("Prefix = %q, want %q, 8 hex digits and a dot", got, want)
		}
	})
}
