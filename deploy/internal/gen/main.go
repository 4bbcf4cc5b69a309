// Command gen writes deploy/strimzi from package deploy: `go generate
// ./deploy/` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argosyproj/argosy/deploy"
)

func main() {
	dir := flag.String("dir", "strimzi", "directory to write the Strimzi manifests into")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := deploy.StrimziFiles(deploy.DefaultKafka())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
