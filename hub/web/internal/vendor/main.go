// Command vendor copies the dashboard's third-party assets (and the browser
// test's axe-core) out of their published npm packages: for each package
// of DIR/vendor.json it runs `npm pack NAME@VERSION` (the registry is npm's
// configured one), checks the tarball's SHA-512 against the recorded
// integrity, extracts the listed files into DIR and writes their SHA-256
// to DIR/SHA256SUMS.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// pkg is one package of vendor.json.
type pkg struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
	// Files maps a path inside the package to the file it is copied to.
	Files   map[string]string `json:"files"`
	License string            `json:"license"`
}

func main() {
	dir := flag.String("dir", "static/vendor", "where vendor.json is and the files go")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "vendor:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "vendor.json"))
	if err != nil {
		return err
	}
	var pkgs []pkg
	if err := json.Unmarshal(b, &pkgs); err != nil {
		return fmt.Errorf("vendor.json: %w", err)
	}
	tmp, err := os.MkdirTemp("", "argosy-vendor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var sums []string
	for _, p := range pkgs {
		files, err := fetch(tmp, p)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", p.Name, p.Version, err)
		}
		for inside, to := range p.Files {
			data, ok := files["package/"+inside]
			if !ok {
				return fmt.Errorf("%s@%s has no %s", p.Name, p.Version, inside)
			}
			if err := os.WriteFile(filepath.Join(dir, to), data, 0o644); err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			sums = append(sums, hex.EncodeToString(sum[:])+"  "+to)
		}
	}
	slices.SortFunc(sums, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644)
}

// fetch packs p into tmp, checks its integrity and returns its files.
func fetch(tmp string, p pkg) (map[string][]byte, error) {
	cmd := exec.Command("npm", "pack", p.Name+"@"+p.Version, "--pack-destination", tmp, "--silent")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("npm pack: %w", err)
	}
	tgz, err := os.ReadFile(filepath.Join(tmp, strings.TrimSpace(lastLine(string(out)))))
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != p.Integrity {
		return nil, fmt.Errorf("integrity %s, want %s", got, p.Integrity)
	}
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg && h.Size < 8<<20 {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
