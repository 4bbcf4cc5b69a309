// Package hubkey owns the files of the hub's Ed25519 signing key, as
// argosy-hub keygen writes them and argosy-hub run, rotate and argosy-dev
// read them: the private key's seed and the public key, each in base64
// on one line.
package hubkey

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argosyproj/argosy/events"
)

// Names of the key files in their directory.
const (
	PrivateKeyFile = "hub.key"
	PublicKeyFile  = "hub.pub"
)

// Write makes a new key and writes it to dir/PrivateKeyFile (readable by
// the owner only) and dir/PublicKeyFile, making dir if needed. It never
// overwrites a key.
func Write(dir string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{PrivateKeyFile, priv.Seed(), 0o600},
		{PublicKeyFile, pub, 0o644},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return nil, fmt.Errorf("keygen: %w (keys are never overwritten)", err)
		}
		_, werr := fh.WriteString(base64.StdEncoding.EncodeToString(f.data) + "\n")
		if err := errors.Join(werr, fh.Close()); err != nil {
			return nil, err
		}
	}
	return pub, nil
}

// Load reads the private key file at path, as Write writes it.
func Load(path string) (*events.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hub key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("hub key %s: want the base64 of a 32-byte Ed25519 seed, as argosy-hub keygen writes", path)
	}
	return events.NewSigner(ed25519.NewKeyFromSeed(seed))
}
