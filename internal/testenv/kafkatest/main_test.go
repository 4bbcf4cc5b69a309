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

// TestClusterIDNeverLooksLikeAnOption checks many ids: one in 64 would begin
// with '-' if nothing prevented it, and the storage tool would refuse it.
func TestClusterIDNeverLooksLikeAnOption(t *testing.T) {
	for range 5000 {
		if id := clusterID(); id[0] == '-' || len(id) != 22 {
			t.Fatalf("cluster id %q", id)
		}
	}
}
