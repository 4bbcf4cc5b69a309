package httpserve

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// kubeletDir lays out a Secret volume as the kubelet's atomic writer does:
// the files in a timestamped directory, ..data a symlink to it, and
// tls.crt and tls.key symlinks through ..data.
type kubeletDir struct {
	t   *testing.T
	dir string
	n   int
}

func (k *kubeletDir) write(cert, key []byte) {
	k.t.Helper()
	k.n++
	ts := filepath.Join(k.dir, "..2026_11_26_12_00_0"+string(rune('0'+k.n)))
	if err := os.Mkdir(ts, 0o755); err != nil {
		k.t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o600); err != nil {
			k.t.Fatal(err)
		}
	}
	tmp := filepath.Join(k.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		k.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.dir, "..data")); err != nil {
		k.t.Fatal(err)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		link := filepath.Join(k.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				k.t.Fatal(err)
			}
		}
	}
}

// TestCertificateReloadsKubeletSwap renews the pair the way the kubelet
// updates a mounted Secret, by swapping the ..data symlink (the files'
// own symlinks, their mtimes and inodes do not change): the next check
// presents the new certificate. A swap between the reads of the two files
// (old certificate, new key) is not a failed renewal: it is neither
// counted nor kept from the next check.
func TestCertificateReloadsKubeletSwap(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	k := &kubeletDir{t: t, dir: t.TempDir()}
	k.write(ca.Issue(t, "first"))
	now := time.Unix(0, 0)
	c, err := NewCertificate(filepath.Join(k.dir, "tls.crt"), filepath.Join(k.dir, "tls.key"), func(c *Certificate) { c.now = func() time.Time { return now } })
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(CheckInterval)
	k.write(ca.Issue(t, "second"))
	got, _ := c.GetCertificate(nil)
	if cn := commonName(t, got); cn != "second" {
		t.Fatalf("after a ..data swap, presents %q, want second", cn)
	}

	// The swap lands between the two reads of one check.
	third, thirdKey := ca.Issue(t, "third")
	c.readFile = func(name string) ([]byte, error) {
		b, err := os.ReadFile(name)
		if filepath.Base(name) == "tls.crt" {
			k.write(third, thirdKey)
		}
		return b, err
	}
	now = now.Add(CheckInterval)
	if _, err := c.GetCertificate(nil); err != nil {
		t.Fatal(err)
	}
	c.readFile = os.ReadFile
	now = now.Add(CheckInterval)
	got, _ = c.GetCertificate(nil)
	if cn := commonName(t, got); cn != "third" {
		t.Errorf("after a swap during a check and another check, presents %q, want third", cn)
	}
	if n := c.Failures(); n != 0 {
		t.Errorf("a swap between the reads of the certificate and the key counted %d reload failure(s), want 0: the kubelet's update is not a bad renewal", n)
	}
}
