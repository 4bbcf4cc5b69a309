package spoke

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// Key files of a spoke, in one directory (a mounted Secret in a cluster).
const (
	SigningKeyFile = "signing.key" // base64 Ed25519 seed
	SealingKeyFile = "sealing.key" // base64 X25519 private key
	PublicKeysFile = "public.json" // the KeyRegistered payloads for the hub
)

// Keys are a spoke's own keys: it signs status with Signing and opens secrets
// sealed to Sealing.
type Keys struct {
	Signing ed25519.PrivateKey
	Sealing events.SealingKey
}

// GenerateKeys makes a new signing and sealing key pair.
func GenerateKeys() (Keys, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Keys{}, fmt.Errorf("generate signing key: %w", err)
	}
	seal, err := events.NewSealingKey()
	if err != nil {
		return Keys{}, err
	}
	return Keys{Signing: priv, Sealing: seal}, nil
}

// Public returns the KeyRegistered payloads that tell the hub about k.
func (k Keys) Public(cluster string) []schemas.KeyRegistered {
	pub := k.Signing.Public().(ed25519.PublicKey)
	return []schemas.KeyRegistered{
		{KeyID: events.KeyID(pub), Owner: cluster, Role: schemas.RoleCluster, Purpose: schemas.PurposeSigning,
			Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub)},
		{KeyID: k.Sealing.ID(), Owner: cluster, Role: schemas.RoleCluster, Purpose: schemas.PurposeSealing,
			Algorithm: "x25519", PublicKey: base64.StdEncoding.EncodeToString(k.Sealing.Public[:])},
	}
}

// WriteKeys writes k into dir: the private keys readable by the owner only,
// and public.json for the hub. It refuses to overwrite existing keys.
func WriteKeys(dir, cluster string, k Keys) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	pub, err := json.MarshalIndent(k.Public(cluster), "", "  ")
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{SigningKeyFile, []byte(base64.StdEncoding.EncodeToString(k.Signing.Seed()) + "\n"), 0o600},
		{SealingKeyFile, []byte(base64.StdEncoding.EncodeToString(k.Sealing.Private[:]) + "\n"), 0o600},
		{PublicKeysFile, append(pub, '\n'), 0o644},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		_, werr := fh.Write(f.data)
		if err := errors.Join(werr, fh.Close()); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// LoadKeys reads a spoke's keys from dir.
func LoadKeys(dir string) (Keys, error) {
	read := func(name string, size int) ([]byte, error) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(b) != size {
			return nil, fmt.Errorf("%s: %d bytes, want %d", name, len(b), size)
		}
		return b, nil
	}
	seed, err := read(SigningKeyFile, ed25519.SeedSize)
	if err != nil {
		return Keys{}, err
	}
	priv, err := read(SealingKeyFile, 32)
	if err != nil {
		return Keys{}, err
	}
	seal, err := events.SealingKeyFromPrivate(priv)
	if err != nil {
		return Keys{}, err
	}
	return Keys{Signing: ed25519.NewKeyFromSeed(seed), Sealing: seal}, nil
}
