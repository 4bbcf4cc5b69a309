package spoke_test

import (
	"testing"

	"github.com/argosyproj/argosy/spoke"
)

func TestKeysRoundTrip(t *testing.T) {
	dir := t.TempDir()
	k, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := spoke.WriteKeys(dir, "c1", k); err != nil {
		t.Fatal(err)
	}
	got, err := spoke.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Signing.Equal(k.Signing) || *got.Sealing.Public != *k.Sealing.Public || *got.Sealing.Private != *k.Sealing.Private {
		t.Error("loaded keys differ from written ones")
	}
	if err := spoke.WriteKeys(dir, "c1", k); err == nil {
		t.Error("WriteKeys overwrote existing keys")
	}
}
