package cli_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
)

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }

type capture struct{ bytes.Buffer }

func (c *capture) line() string { return strings.TrimSpace(c.String()) }

// clusterKeys returns a new cluster's public keys as a registration sends
// them.
func clusterKeys(t *testing.T) (signing, sealing string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(sk.Public[:])
}
