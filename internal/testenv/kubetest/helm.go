package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Helm runs the cached helm (HelmVersion) with args and returns what it
// wrote to standard output; an error carries its standard error. It needs
// no cluster: template and lint are what the tests run.
func Helm(ctx context.Context, args ...string) ([]byte, error) {
	b, err := Locate()
	if err != nil {
		return nil, err
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, b.Helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}
