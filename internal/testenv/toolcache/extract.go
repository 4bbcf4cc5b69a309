package toolcache

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxExtractBytes bounds the bytes extract writes, against corrupt or hostile
// archives. npm refuses packages far smaller than this.
const maxExtractBytes = 1 << 30

// errUnsafePath is returned for an archive entry that would land outside the
// destination.
var errUnsafePath = errors.New("entry path escapes the destination")

// extract unpacks the gzipped tarball at path into dir, which must not exist.
// Only directories and regular files are created; links and devices are
// skipped.
func extract(path, dir string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	tr := tar.NewReader(gz)
	var written int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		rel := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%w: %q", errUnsafePath, h.Name)
		}
		target := filepath.Join(dir, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
		case tar.TypeReg:
			n, err := writeFile(target, tr, h.FileInfo().Mode(), maxExtractBytes-written)
			if err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
			written += n
		}
	}
}

// writeFile copies at most limit bytes of r to a new file at path, creating
// its parent directories.
func writeFile(path string, r io.Reader, mode os.FileMode, limit int64) (n int64, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	n, err = io.Copy(w, io.LimitReader(r, limit+1))
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, fmt.Errorf("archive larger than %d bytes", int64(maxExtractBytes))
	}
	return n, nil
}
